#!/usr/bin/env python3
"""The recipes of contrib/ read and run as Spack and EasyBuild do, without
either installed (tests/recipes/recipes_check.sh drives it).

  recipes.py spack-info PACKAGE_PY PREFIX [+cuda] [+run_tests]
      JSON: the versions (version -> sha256) and the meson arguments the
      recipe gives for that spec: Spack's MesonBuilder.std_args (Spack
      1.x, spack-packages' build_systems/meson.py) then the recipe's
      meson_args()
  recipes.py spack-check PACKAGE_PY BUILD_DIR PREFIX
      the recipe's check() (what `spack install --test=root` runs after the
      build phase), in BUILD_DIR
  recipes.py spack-test PACKAGE_PY SOURCE_DIR PREFIX WORK_DIR
      its @run_after("install") methods (cache_extra_test_sources copies
      from SOURCE_DIR into PREFIX/.spack/test, as Spack does from the
      stage), then every test_* method, as `spack test run` does: from a
      copy of that cache (test_suite.current_test_cache_dir), in WORK_DIR
  recipes.py eb-info EASYCONFIG
      JSON: the easyconfig's parameters, its templates and constants
      resolved as EasyBuild does for them
  recipes.py options BUILDOPTIONS_JSON ARG...
      every -Dname=value among ARGs names an option of
      `meson introspect --buildoptions` (the JSON file); exit 1 if not

The Spack API is stubbed with the parts the recipe uses: a recipe that
calls anything else fails here (NameError), as it would need a real Spack
to be checked.
"""
import contextlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import types


class ProcessError(Exception):
    pass


class Prefix(str):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return Prefix(os.path.join(self, name))

    def join(self, name):
        return Prefix(os.path.join(self, name))


class Executable:
    def __init__(self, path):
        self.path = path
        self.env = {}

    def add_default_env(self, key, value):
        self.env[key] = value

    def __call__(self, *args, output=None, error=None, **_):
        cmd = [self.path] + [str(a) for a in args]
        print("==> " + " ".join(shlex.quote(c) for c in cmd), flush=True)
        capture = output is str or (callable(output) and output is not None)
        r = subprocess.run(cmd, env=dict(os.environ, **self.env), text=True,
                           stdout=subprocess.PIPE if capture else None,
                           stderr=subprocess.STDOUT if capture and error is not None else None)
        if capture:
            sys.stdout.write(r.stdout)
        if r.returncode != 0:
            raise ProcessError("command exited %d: %s" % (r.returncode, " ".join(cmd)))
        return r.stdout if capture else None


def which(*names, required=False, path=None):
    for name in names:
        found = name if os.path.isabs(name) and os.access(name, os.X_OK) else shutil.which(name, path=path)
        if found:
            return Executable(found)
    if required:
        raise ProcessError("none of %s found" % (names,))
    return None


@contextlib.contextmanager
def working_dir(path, create=False):
    if create:
        os.makedirs(path, exist_ok=True)
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


class Spec:
    def __init__(self, name, version, variants, prefix):
        self.name, self.version, self.variants, self.prefix = name, version, variants, Prefix(prefix)

    def satisfies(self, constraint):
        for word in constraint.split():
            if word.startswith("+"):
                if not self.variants.get(word[1:], False):
                    return False
            elif word.startswith("~"):
                if self.variants.get(word[1:], False):
                    return False
            else:
                raise NotImplementedError("spec constraint %r is not stubbed here" % word)
        return True

    def __contains__(self, constraint):
        return self.satisfies(constraint)

    def __getitem__(self, name):
        if name == "cuda":  # an external CUDA: this machine's Toolkit
            return types.SimpleNamespace(prefix=Prefix(os.environ.get("CUDA_HOME", "/usr/local/cuda")))
        if name == "c":
            return types.SimpleNamespace(package=types.SimpleNamespace(cc=os.environ.get("CC", "cc")))
        raise KeyError(name)


def load_spack_recipe(path):
    recorded = {"versions": {}, "variants": {}, "depends_on": [], "run_after": []}
    api = types.ModuleType("spack.package")

    class MesonPackage:
        run_tests = False

    def version(ver, sha256=None, **_):
        recorded["versions"][ver] = sha256

    def variant(name, default=None, **_):
        recorded["variants"][name] = default

    def depends_on(spec, **kw):
        recorded["depends_on"].append((spec, kw))

    def run_after(phase, **_):
        def deco(fn):
            recorded["run_after"].append((phase, fn.__name__))
            return fn
        return deco

    def cache_extra_test_sources(pkg, srcs):
        for src in srcs:
            dest = os.path.join(pkg.prefix, ".spack", "test", src)
            if os.path.isdir(os.path.join(pkg.stage_source, src)):
                shutil.copytree(os.path.join(pkg.stage_source, src), dest, dirs_exist_ok=True)
            else:
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                shutil.copy2(os.path.join(pkg.stage_source, src), dest)

    api.__dict__.update(MesonPackage=MesonPackage, version=version, variant=variant, depends_on=depends_on,
                        license=lambda *a, **k: None, run_after=run_after, join_path=os.path.join,
                        which=which, working_dir=working_dir, cache_extra_test_sources=cache_extra_test_sources,
                        Prefix=Prefix, ProcessError=ProcessError)
    api.__all__ = [n for n in api.__dict__ if not n.startswith("_")]
    spack = types.ModuleType("spack")
    spack.package = api
    sys.modules["spack"], sys.modules["spack.package"] = spack, api
    module = types.ModuleType("spack_recipe_ldshim")
    module.__file__ = path
    with open(path) as f:
        exec(compile(f.read(), path, "exec"), module.__dict__)
    classes = [v for v in module.__dict__.values() if isinstance(v, type) and issubclass(v, MesonPackage)
               and v is not MesonPackage]
    if len(classes) != 1:
        sys.exit("recipes: %s defines %d MesonPackage classes, not one" % (path, len(classes)))
    return module, classes[0], recorded


def spack_package(path, prefix, words=()):
    module, cls, recorded = load_spack_recipe(path)
    variants = {k: bool(v) for k, v in recorded["variants"].items()}
    for w in words:
        if w.startswith("+") and w[1:] != "run_tests":
            variants[w[1:]] = True
    pkg = cls()
    version = sorted(recorded["versions"])[-1]
    pkg.spec = Spec(cls.__name__.lower(), version, variants, prefix)
    pkg.prefix = Prefix(prefix)
    pkg.run_tests = "+run_tests" in words
    return module, pkg, recorded


def spack_std_args(prefix):
    # spack-packages repos/spack_repo/builtin/build_systems/meson.py,
    # MesonBuilder.std_args with the variants' defaults (buildtype=release,
    # ~strip, default_library=shared).
    return ["-Dprefix=" + prefix, "-Dlibdir=" + os.path.join(prefix, "lib"), "-Dbuildtype=release",
            "-Dstrip=false", "-Ddefault_library=shared", "-Dwrap_mode=nodownload"]


def eb_info(path):
    name_version = {}
    consts = {"SOURCELOWER_TAR_XZ": "%(namelower)s-%(version)s.tar.xz", "SOURCE_TAR_XZ": "%(name)s-%(version)s.tar.xz",
              "SHLIB_EXT": "so"}
    env = dict(consts)
    with open(path) as f:
        exec(compile(f.read(), path, "exec"), env)
    params = {k: v for k, v in env.items() if not k.startswith("__") and k not in consts}
    name_version = {"name": params["name"], "namelower": params["name"].lower(), "version": params["version"]}

    def resolve(value):
        if isinstance(value, str):
            return value % name_version if "%(" in value else value
        if isinstance(value, (list, tuple)):
            return type(value)(resolve(v) for v in value)
        if isinstance(value, dict):
            return {k: resolve(v) for k, v in value.items()}
        return value
    return {k: resolve(v) for k, v in params.items()}


def options_check(buildoptions, args):
    with open(buildoptions) as f:
        known = {o["name"] for o in json.load(f)}
    bad = 0
    for arg in args:
        m = re.match(r"-D([^=]+)=", arg)
        if not m:
            continue
        if m.group(1) in known:
            print("  %-30s an option of this meson build" % arg.split("=")[0])
        else:
            print("  %-30s NOT an option of this meson build" % arg.split("=")[0])
            bad += 1
    return 1 if bad else 0


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(argv) >= 2 else 2
    cmd, args = argv[1], argv[2:]
    if cmd == "spack-info" and len(args) >= 2:
        _, pkg, recorded = spack_package(args[0], args[1], args[2:])
        print(json.dumps({"versions": recorded["versions"],
                          "meson_args": spack_std_args(args[1]) + pkg.meson_args()}))
        return 0
    if cmd == "spack-check" and len(args) == 3:
        module, pkg, _ = spack_package(args[0], args[2], ["+run_tests"])
        module.meson = which("meson", required=True)  # Spack puts it in the recipe's module
        pkg.build_directory = args[1]
        pkg.check()
        return 0
    if cmd == "spack-test" and len(args) == 4:
        _, pkg, recorded = spack_package(args[0], args[2])
        pkg.stage_source = args[1]
        for phase, fn in recorded["run_after"]:
            if phase == "install":
                getattr(pkg, fn)()
        cache = os.path.join(args[3], "cache")
        shutil.copytree(os.path.join(args[2], ".spack", "test"), cache)
        pkg.test_suite = types.SimpleNamespace(current_test_cache_dir=Prefix(cache))
        failed = 0
        tests = sorted(n for n in dir(pkg) if n.startswith("test_") and callable(getattr(pkg, n)))
        for name in tests:
            doc = (getattr(pkg, name).__doc__ or "").strip()
            print("==> [spack test] %s: %s" % (name, doc), flush=True)
            with working_dir(os.path.join(args[3], name), create=True):
                try:
                    getattr(pkg, name)()
                    print("PASSED: %s" % name)
                except (ProcessError, AssertionError) as e:
                    print("FAILED: %s: %s" % (name, e))
                    failed += 1
        return 1 if failed or not tests else 0
    if cmd == "eb-info" and len(args) == 1:
        print(json.dumps(eb_info(args[0])))
        return 0
    if cmd == "options" and args:
        return options_check(args[0], args[1:])
    print("recipes: unknown command or arguments (see --help)", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
