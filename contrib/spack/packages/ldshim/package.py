# ldshim's Spack recipe (contrib/README.md says how it is used and checked).
# SPDX-License-Identifier: MIT
import os

from spack.package import *  # noqa: F401,F403 -- Spack's recipe API

try:  # Spack 1.0 and later: the build systems are in the builtin repository
    from spack_repo.builtin.build_systems.meson import MesonPackage
except ImportError:  # Spack before 1.0: spack.package has them
    pass


class Ldshim(MesonPackage):
    """A preload library that gives dlopen back the loader's library search
    behind interposers such as UCX's ucm (the Julia + UCX report), with the
    ldsearch and ldshim-hooks tools and a C API (ldshim.h)."""

    homepage = "https://example.org/ldshim"
    url = "https://example.org/ldshim/releases/ldshim-0.1.0.tar.xz"

    license("MIT")

    # The source tarball of scripts/release.sh (scripts/dist.sh: meson dist).
    version("0.1.0", sha256="78739342119ddc4f25a2b0371a61c117a55e8671afa63ffe6f8f16cac05cd6bf")

    variant("cuda", default=False, description="The CUDA allocation hooks (the Toolkit's headers only)")
    variant(
        "static_ldsearch",
        default=True,
        description="Link ldsearch fully static (needs the C library's static archive)",
    )

    depends_on("c", type="build")
    depends_on("cxx", type="build")
    depends_on("meson@1.0.0:", type="build")
    depends_on("python@3:", type="build")  # ldsearch embeds its audit module with a script
    depends_on("nlohmann-json", type="build")  # ldsearch's JSON output: headers only
    # The hooks take their signatures from the Toolkit's headers: nothing of
    # CUDA is linked.
    depends_on("cuda", type="build", when="+cuda")
    # The GoogleTest suites, built only when Spack runs them (--test).
    depends_on("googletest+gmock", type="test")
    depends_on("elfutils", type="test")  # libelf, for the unit tests' ELF facts

    def meson_args(self):
        spec = self.spec
        args = [
            "-Dtests={0}".format("true" if self.run_tests else "false"),
            "-Dbench=false",
            "-Dstatic_ldsearch={0}".format("true" if spec.satisfies("+static_ldsearch") else "false"),
        ]
        if spec.satisfies("+cuda"):
            args += ["-Dcuda=enabled", "-Dcudatoolkit_include={0}".format(spec["cuda"].prefix.include)]
        else:
            args.append("-Dcuda=disabled")
        return args

    # `spack install --test=root ldshim`: the suites that run as any user
    # without MPI, UCX or the Debian roots (scripts/test.sh runs them all).
    test_suites = ("unit", "c-api", "interposers")

    def check(self):
        """meson test of the suites a packager's build can run"""
        suites = [arg for suite in self.test_suites for arg in ("--suite", suite)]
        with working_dir(self.build_directory):
            meson("test", "--no-rebuild", "--print-errorlogs", *suites)  # noqa: F405

    # The stand-alone test: the report's Julia-shaped program in miniature
    # (tests/package/repair.c, driven by tests/package/cases.sh), built at
    # test time against nothing but the C library.
    test_src_dir = join_path("tests", "package")

    @run_after("install")
    def cache_test_sources(self):
        """Keep the repair case's sources for `spack test run ldshim`."""
        # repair.c includes the GOT patcher of the resolver suite's fixtures.
        got_patch = join_path("tests", "resolver", "fixtures", "got_patch.h")
        cache_extra_test_sources(self, [self.test_src_dir, got_patch])

    def _test_cc(self):
        try:  # Spack 1.0 and later: the compiler is a dependency
            return self.spec["c"].package.cc
        except (AttributeError, KeyError):
            return self.compiler.cc

    def test_repair(self):
        """the preload repairs a ucm-like dlopen interposer (the Julia + UCX report)"""
        test_dir = join_path(self.test_suite.current_test_cache_dir, self.test_src_dir)
        preload = join_path(self.prefix.lib, "libldshim_preload.so")
        case_dir = join_path(os.getcwd(), "repair-case")
        sh = which("sh", required=True)
        sh.add_default_env("CC", self._test_cc())
        out = sh(join_path(test_dir, "cases.sh"), "repair", preload, case_dir, output=str, error=str)
        assert "ucm-like + ldshim:" in out, out

    def test_ldsearch_version(self):
        """ldsearch and ldshim-hooks report the installed version"""
        for tool in ("ldsearch", "ldshim-hooks"):
            exe = which(join_path(self.prefix.bin, tool), required=True)
            out = exe("--version", output=str, error=str)
            assert out.split()[-1] == str(self.spec.version), out
