// ldsearch's command line.  Parsing never exits: --help, --version and usage
// errors come back to main as a ParseResult.
#include "options.h"

#include "ldshim_version.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

namespace ldsearch {
namespace {

constexpr const char* kHelp = R"(Usage: ldsearch [OPTION]... PROGRAM
       ldsearch tree [OPTION]... PROGRAM
Print the library search that the dynamic loader performs while PROGRAM starts,
exactly as LD_DEBUG=libs prints it (without the "PID:<TAB>" prefix), without
running PROGRAM.  LD_LIBRARY_PATH and LD_PRELOAD are taken from the environment
and applied as the loader would apply them for PROGRAM.

       ldsearch why NAME [--from OBJECT] [OPTION]... PROGRAM
       ldsearch --diff [--keep] [--json] -- COMMAND [ARG]...
       ldsearch --replay [--json] LOG...
       ldsearch check [--json] [--jobs N] [--no-config-cache] [--root DIR] PATH...
Modes (the first argument; "ldsearch -- tree" means a program named tree):
  tree                   the dependency tree instead: every DT_NEEDED entry,
                         the file it resolved to and how it was found (RPATH
                         of X, LD_LIBRARY_PATH, RUNPATH of X, ld.so.cache,
                         system directory, already loaded, already loaded as
                         SONAME); missing libraries are marked, and the walk
                         goes on past them
  why NAME               every place the loader considered for NAME and why
                         each was rejected or not searched (missing
                         directory, wrong ELF class or machine, NODEFLIB,
                         RUNPATH not inherited, RPATH turned off by a
                         RUNPATH, a token dropped in secure mode, a name with
                         a slash), then a one-line verdict.  The lookup is
                         the one startup makes for NAME; with --from OBJECT,
                         or for a name nothing needs, a dlopen from OBJECT
                         (default: PROGRAM).  Exit status 0 if found, 1 if not
  check PATH...          every ELF program and shared library under the
                         files and directories PATH (symbolic links inside
                         a directory are not followed; other files, and ELF
                         files for another class or machine, are counted and
                         skipped; x86-64 and aarch64 files are each checked
                         with their own machine's loader, an aarch64 one
                         through qemu-user, and skipped with a warning where
                         it cannot run), in parallel: each program resolved
                         as at its start (as --keep-going models it), each
                         library as a dlopen of its path from a program that
                         needs nothing.  Reports missing libraries (and who
                         needs them), libraries found only through
                         LD_LIBRARY_PATH, RPATH/RUNPATH entries that name no
                         directory or one outside the PATHs, files skipped
                         for their ELF class or machine, and SONAMEs resolved
                         to different files across the checked files; then a
                         summary line.  --jobs N: N threads (default: one per
                         CPU).  --root DIR: PATHs, libraries and loaders are
                         those inside DIR, as for --root below.  Exit status
                         0 if nothing is reported, 1 if anything is, 3 if a
                         PATH does not exist

Checking ldsearch against the real loader:
  --diff -- COMMAND      run COMMAND with LD_DEBUG=libs,files written through
                         LD_DEBUG_OUTPUT (its own output is untouched; child
                         processes are covered), then replay every search of
                         every process -- startup, and each dlopen from the
                         object the loader attributed it to -- and print a
                         unified diff per differing search, or "N searches in
                         M processes: all identical".  Each process is modelled
                         with the environment it started with (LD_LIBRARY_PATH,
                         LD_PRELOAD, GLIBC_TUNABLES ...), recorded by a small
                         LD_AUDIT module.  --keep keeps the capture
  --replay LOG...        the same on LD_DEBUG_OUTPUT files captured earlier
                         (with LD_DEBUG=libs,files); a log without the records
                         of --diff --keep is modelled with ldsearch's environment

Output:
  --json                 one JSON document instead of text (schema:
                         docs/ldsearch.schema.json)
  --color[=WHEN]         tree colours: auto (default: on a terminal unless
                         NO_COLOR is set), always, never

After startup, dlopen calls can be emulated:
  --dlopen NAME          dlopen(NAME, RTLD_NOW) from the current --from object;
                         prints its search lines, then the l_name of the object
                         it returns (repeatable, in order)
  --dlopen-noload NAME   the same with RTLD_NOLOAD
  --dlmopen NAME         dlmopen(LM_ID_NEWLM, NAME)
  --from OBJECT          the calling object for the following dlopens: PROGRAM
                         (the default) or an object loaded so far, named by
                         path, l_name or SONAME (a name several loaded
                         objects answer to is refused: use the path).  It
                         goes before the --dlopen it applies to; a --from
                         that no later --dlopen follows is a usage error
                         (exit 2)

Modelling the process:
  --keep-going           continue past missing libraries, as the loader does
                         under LD_TRACE_LOADED_OBJECTS=1 (ldd)
  --secure               model a set-user-ID start (AT_SECURE); by default this
                         is derived from PROGRAM's set-id bits and your ids
  --no-secure            never model AT_SECURE
  --library-path PATH    like ld.so --library-path (replaces LD_LIBRARY_PATH)
  --inhibit-rpath LIST   like ld.so --inhibit-rpath
  --inhibit-cache        like ld.so --inhibit-cache
  --cache FILE           read FILE as /etc/ld.so.cache (lines still name
                         /etc/ld.so.cache, as the loader prints it)
  --root DIR             a sysroot: PROGRAM, its libraries, /etc/ld.so.cache,
                         /etc/ld.so.preload and the interpreter are those
                         inside DIR; symlinks, $ORIGIN and ".." are resolved
                         as after chroot(DIR) and never leave it.  Printed
                         paths are the paths inside DIR.  Relative names
                         start at the current directory if it lies inside
                         DIR, else at DIR's /
  --ld-so PATH           the loader whose configuration is used (default:
                         PROGRAM's PT_INTERP)
  --platform NAME        model another $PLATFORM (and legacy platform
                         subdirectory); default: the running loader's
  --hwcaps LIST          model these glibc-hwcaps subdirectories, highest
                         priority first (e.g. x86-64-v3,x86-64-v2; "none" for
                         none); they also select ld.so.cache entries
  --lib NAME             model another $LIB (e.g. lib64)
  --env NAME=VALUE       model PROGRAM's environment variable NAME (one of
                         LD_LIBRARY_PATH, LD_PRELOAD, LD_ORIGIN_PATH) without
                         setting it for ldsearch itself; "--env NAME" unsets it
  --all-lines            print every LD_DEBUG=libs line of the searches,
                         including the empty lines that close them
  --no-config-cache      ask the loader for its configuration (ld.so --help)
                         instead of reusing the answer cached under
                         $XDG_CACHE_HOME/ldshim (or ~/.cache/ldshim); the cache
                         key covers the loader file, the CPU, GLIBC_TUNABLES,
                         LD_HWCAP_MASK, the boot and this ldsearch's build;
                         LDSHIM_NO_CACHE=1 also disables it

  -h, --help             show this help and exit
  -V, --version          show the version and exit

Exit status: 0 success; 1 PROGRAM would fail to start, or a dlopen would fail,
or (--diff, --replay) a search differs, or (check) a problem was found;
125 --diff could not run COMMAND (exec failed: the reason is printed on stderr);
2 usage error; 3 PROGRAM (or a check PATH) cannot be read or is not an ELF
program for this loader; 4 the loader's configuration could not be read.
)";

ParseResult usage(std::string msg) {
    ParseResult r;
    r.error = std::move(msg);
    r.status = kUsage;
    return r;
}

// The options of the search, tree and why modes that set one member.
struct FlagOption {
    const char* name;
    bool Options::*field;
};
constexpr FlagOption kFlags[] = {
    {"--keep-going", &Options::keep_going},
    {"--inhibit-cache", &Options::inhibit_cache},
    {"--no-config-cache", &Options::no_cache},
    {"--all-lines", &Options::all_lines},
    {"--json", &Options::json},
};
struct ValueOption {
    const char* name;
    std::optional<std::string> Options::*field;
};
constexpr ValueOption kValues[] = {
    {"--library-path", &Options::library_path},
    {"--inhibit-rpath", &Options::inhibit_rpath},
    {"--cache", &Options::cache_file},
    {"--ld-so", &Options::ld_so},
    {"--root", &Options::root},
    {"--platform", &Options::platform},
    {"--hwcaps", &Options::hwcaps},
    {"--lib", &Options::dst_lib},
};
struct OpOption {
    const char* name;
    Op::Kind kind;
};
constexpr OpOption kOps[] = {
    {"--dlopen", Op::Kind::dlopen},
    {"--dlopen-noload", Op::Kind::noload},
    {"--dlmopen", Op::Kind::dlmopen},
    {"--from", Op::Kind::from},
};

// Checked before an option is handled, so that a missing value is reported
// as "requires an argument" whatever the option.
bool takes_value(const std::string& a) {
    if (a == "--env") return true;
    for (const auto& v : kValues)
        if (a == v.name) return true;
    for (const auto& op : kOps)
        if (a == op.name) return true;
    return false;
}

// --diff [--keep] [--json] -- COMMAND [ARG]... and --replay [--json] LOG...
ParseResult parse_check_mode(int argc, char** argv) {
    Options o;
    bool diff = std::strcmp(argv[1], "--diff") == 0;
    o.mode = diff ? Mode::diff : Mode::replay;
    int i = 2;
    for (; i < argc; ++i) {
        if (std::strcmp(argv[i], "--json") == 0) {
            o.json = true;
            continue;
        }
        if (!diff) break;
        if (std::strcmp(argv[i], "--") == 0) {
            ++i;
            break;
        }
        if (std::strcmp(argv[i], "--keep") == 0)
            o.keep = true;
        else
            return usage(std::string("--diff: unexpected '") + argv[i] + "' (use --diff [--keep] [--json] -- COMMAND)");
    }
    for (; i < argc; ++i) o.operands.emplace_back(argv[i]);
    if (o.operands.empty()) return usage(diff ? "--diff: missing COMMAND after --" : "--replay: missing LOG");
    return {std::move(o)};
}

// check [--json] [--jobs N] [--no-config-cache] [--root DIR] [--] PATH...
ParseResult parse_check_command(int argc, char** argv) {
    Options o;
    o.mode = Mode::check;
    bool options = true;
    for (int i = 2; i < argc; ++i) {
        std::string a = argv[i];
        if (options && a == "--") {
            options = false;
        } else if (options && (a == "-h" || a == "--help")) {
            ParseResult r;
            r.out = kHelp;
            return r;
        } else if (options && a == "--json") {
            o.json = true;
        } else if (options && a == "--no-config-cache") {
            o.no_cache = true;
        } else if (options && a == "--root") {
            if (i + 1 >= argc) return usage("option '" + a + "' requires an argument");
            o.root = argv[++i];
        } else if (options && (a == "--jobs" || a == "-j")) {
            if (i + 1 >= argc) return usage("option '" + a + "' requires an argument");
            std::string n = argv[++i];
            char* end = nullptr;
            unsigned long v = std::strtoul(n.c_str(), &end, 10);
            if (n.empty() || *end != '\0' || v == 0 || v > 1024 || n[0] == '-')
                return usage("check: --jobs: expected a number from 1 to 1024, not '" + n + "'");
            o.jobs = static_cast<unsigned>(v);
        } else if (options && a.size() > 1 && a[0] == '-') {
            return usage("check: unrecognized option '" + a + "'");
        } else {
            o.operands.push_back(a);
        }
    }
    if (o.operands.empty()) return usage("check: missing PATH");
    return {std::move(o)};
}

// One option of the search, tree and why modes, `a`; its value, if it takes
// one, is argv[++i].  Returns false if `a` is no such option, and sets
// `error` for a bad value.
bool parse_option(const std::string& a, char** argv, int& i, Options& o, std::string& error) {
    for (const auto& f : kFlags)
        if (a == f.name) {
            o.*f.field = true;
            return true;
        }
    for (const auto& v : kValues)
        if (a == v.name) {
            o.*v.field = argv[++i];
            return true;
        }
    for (const auto& op : kOps)
        if (a == op.name) {
            o.ops.push_back({op.kind, argv[++i]});
            return true;
        }
    if (a == "--secure" || a == "--no-secure") {
        o.secure = a == "--secure";
    } else if (a == "--env") {
        std::string kv = argv[++i];
        auto eq = kv.find('=');
        std::string name = kv.substr(0, eq);
        if (name != "LD_LIBRARY_PATH" && name != "LD_PRELOAD" && name != "LD_ORIGIN_PATH")
            error = "--env: unsupported variable '" + name + "'";
        else
            o.env_over.emplace_back(
                name, eq == std::string::npos ? std::nullopt : std::optional<std::string>(kv.substr(eq + 1)));
    } else if (a == "--color" || a.rfind("--color=", 0) == 0) {
        o.color = a.size() > 8 ? a.substr(8) : "always";
        if (o.color != "auto" && o.color != "always" && o.color != "never")
            error = "--color: expected auto, always or never, not '" + o.color + "'";
    } else {
        return false;
    }
    return true;
}

}  // namespace

int usage_error(const std::string& msg) {
    std::fprintf(stderr, "ldsearch: %s\nTry 'ldsearch --help' for more information.\n", msg.c_str());
    return kUsage;
}

ParseResult parse_options(int argc, char** argv) {
    if (argc > 1 && (std::strcmp(argv[1], "--diff") == 0 || std::strcmp(argv[1], "--replay") == 0))
        return parse_check_mode(argc, argv);
    if (argc > 1 && std::strcmp(argv[1], "check") == 0) return parse_check_command(argc, argv);
    Options o;
    int first = 1;
    if (argc > 1 && std::strcmp(argv[1], "tree") == 0) {
        o.mode = Mode::tree;
        first = 2;
    } else if (argc > 1 && std::strcmp(argv[1], "why") == 0) {
        o.mode = Mode::why;
        first = 2;
    }
    for (int i = first; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "-h" || a == "--help") {
            ParseResult r;
            r.out = kHelp;
            return r;
        }
        if (a == "-V" || a == "--version") {
            ParseResult r;
            r.out = std::string("ldsearch (ldshim) ") + LDSHIM_VERSION_STRING + "\n";
            return r;
        }
        if (takes_value(a) && i + 1 >= argc) return usage("option '" + a + "' requires an argument");
        std::string error;
        if (parse_option(a, argv, i, o, error)) {
            if (!error.empty()) return usage(error);
        } else if (a == "--") {
            if (i + 1 < argc) o.program = argv[++i];
            if (i + 1 < argc) return usage("too many arguments");
        } else if (a.size() > 1 && a[0] == '-') {
            return usage("unrecognized option '" + a + "'");
        } else if (o.mode == Mode::why && o.why_name.empty()) {
            o.why_name = a;
        } else if (o.program.empty()) {
            o.program = a;
        } else {
            return usage("too many arguments");
        }
    }
    if (o.mode == Mode::why && o.why_name.empty()) return usage("why: missing NAME");
    if (o.program.empty()) return usage("missing PROGRAM");
    if (o.mode == Mode::why)
        for (const auto& op : o.ops)
            if (op.kind != Op::Kind::from) return usage("why: --dlopen and friends do not apply; use --from");
    // --from sets the caller of the --dlopens after it.  One that none
    // follows would be ignored, and `--dlopen NAME --from OBJECT` (the
    // order of `why NAME --from OBJECT`) would silently search from PROGRAM.
    if (o.mode != Mode::why && !o.ops.empty() && o.ops.back().kind == Op::Kind::from) {
        const std::string& from = o.ops.back().arg;
        return usage("--from " + from + " applies to the --dlopen options after it, and none follows; put it first: " +
                     "ldsearch --from " + from + " --dlopen NAME PROGRAM");
    }
    return {std::move(o)};
}

}  // namespace ldsearch
