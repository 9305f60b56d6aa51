// Seeded random library trees for the differential suite: random DT_NEEDED
// graphs, RPATH/RUNPATH lists with tokens, empty, missing and non-directory
// elements, glibc-hwcaps and legacy hwcap subdirectories, duplicate SONAMEs,
// LD_LIBRARY_PATH, LD_PRELOAD and a private ld.so.cache, plus dlopen calls
// from random objects and, in trees with events, the changes a process makes
// between its calls (environment, working directory, files and directories,
// the cache rewritten, dlclose, two threads).  Each tree runs under the real loader, through
// ldsearch and through the runtime resolver; a difference is shrunk to a
// small tree that still shows one.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace ldshim::difftest::gen {

// A list of path elements (joined with ':'); nullopt = the tag is absent.
using PathList = std::optional<std::vector<std::string>>;

// Strings may contain "@/", the tree's root (an absolute path known only
// when the tree is built).
struct GenLibrary {
    std::string file;  // tree-relative path of the shared object
    std::string soname;
    std::vector<std::string> needed;  // DT_NEEDED names
    PathList rpath, runpath;
    bool nodeflib = false;   // DF_1_NODEFLIB (-z nodefaultlib)
    std::string symlink_to;  // non-empty: a symbolic link to this library file instead
};

// A dlopen call, or a process event between calls (the driver's kinds,
// fixtures/gen_driver.c).
struct GenOp {
    // Calls: 'o' dlopen, 'n' RTLD_NOLOAD, 'z' RTLD_NODELETE, 't' the same
    // dlopen from two threads at once.  Events: 'c' dlclose of the latest
    // open of `name` from `caller`; 'E' environment (`caller`: s setenv,
    // u unsetenv, p putenv, c clearenv, r environ replaced; `name`:
    // "NAME=VALUE" or NAME); 'D' chdir(name); 'M' mkdir(name); 'R' remove
    // name and all it holds; 'P' copy caller to name (a new file renamed
    // over it); 'V' rename(caller, name).
    char kind = 'o';
    std::string caller;  // calls and 'c': "" = the main program, else a library's file
    std::string name;    // may start with "@/"
    bool is_call() const { return kind == 'o' || kind == 'n' || kind == 'z' || kind == 't'; }
};

struct GenTree {
    std::uint64_t seed = 0;
    std::string exe = "prog";  // tree-relative
    std::vector<std::string> exe_needed;
    PathList exe_rpath, exe_runpath;
    bool exe_nodeflib = false;
    std::vector<GenLibrary> libs;
    std::vector<std::string> dirs;  // directories created even when empty
    // Symbolic links to directories: (link, target), both tree-relative, the
    // target as the link holds it.  Made after `dirs`; no library is placed
    // through one, so each file has one name of its own.
    std::vector<std::pair<std::string, std::string>> dir_links;
    std::vector<std::string> files;  // regular files that are not libraries
    PathList ld_library_path;        // joined with llp_sep
    char llp_sep = ':';
    std::vector<std::string> preload;  // joined with preload_sep
    char preload_sep = ' ';
    std::vector<std::string> cache_dirs;  // non-empty: a private ld.so.cache of these
    // The cache as @/etc/ld.so.cache, with @/etc over /etc (so that an event
    // may replace or remove it as ldconfig does), and a second cache of
    // cache_next_dirs at @/etc/ld.so.cache.1 for an event to put in place.
    bool cache_in_etc = false;
    std::vector<std::string> cache_next_dirs;
    std::vector<GenOp> ops;
};

// The machine whose loader runs the trees: it decides the subdirectories
// the loader tries in each directory, which the trees place libraries in
// and name directories after.
enum class Machine { x86_64, aarch64 };
// `events`: process events among the operations, and what they need
// (relative list elements, a second cache), drawn from a stream of their
// own after the rest of the tree, which is the seed's tree without events.
GenTree generate(std::uint64_t seed, bool with_cache, Machine machine, bool events = false);

// The tree as people read it ("@" is the tree's root).
std::string describe(const GenTree& t);

// LDSHIM_GEN_RETURN_POINTS=0: the resolver's runs set LDSHIM_RETURN_POINTS=0,
// ldshim's fallback where a shadow stack leaves no return point.
bool without_return_points();

struct Verdict {
    bool broken = false;   // the tree could not be built or run (an error in the generator)
    bool started = false;  // the program got past startup under the real loader
    bool crashed = false;  // ... and then died of a signal (compared up to there)
    std::string report;    // ldsearch against the loader, as unified diffs ("" = the same)
    std::string resolver;  // ldshim_dlopen_from against dlopen ("" = the same)
    // Operations glibc alone loaded where ldshim's run failed or loaded
    // another object (the census; generator_run.cc: loaded_by_glibc_alone).
    std::size_t glibc_only = 0;
    bool differs() const { return !report.empty(); }
    bool resolver_differs() const { return !resolver.empty(); }
};

// Which comparison a shrink must keep failing.
enum class Check { ldsearch, resolver };

// Objects every tree shares (the driver, the library object, stub libraries
// that give DT_NEEDED names) live in one directory per process.
// A generated tree's directory (generator_run.cc).
struct TreePlace;

class Workshop {
public:
    // `sysroot`: run every tree under the loader of this root (a glibc built
    // by scripts/glibc-roots.sh, or any root with a /bin/sh) rather than this
    // machine's: built here against the root's glibc, run chrooted, and
    // compared with `ldsearch --root` (without the `--diff` run, which starts
    // the program itself).  `ldshim_lib`: the libldshim the resolver's runs
    // use, as the tree's programs see it (default: this build's, and none in
    // a sysroot: the resolver then does not run).
    explicit Workshop(std::string sysroot = "", std::string ldshim_lib = "");
    ~Workshop();
    Workshop(const Workshop&) = delete;
    Workshop& operator=(const Workshop&) = delete;

    // Builds the tree in a fresh directory, runs it three ways, compares.
    Verdict run(const GenTree& t, bool with_resolver) const;
    // Greedy shrinking: single-step reductions kept while some difference
    // persists.  `budget` bounds the number of runs.
    GenTree shrink(GenTree t, Check which, int budget) const;
    // The resolver's one known limit (docs/fidelity.md) as a counterfactual:
    // true when, at the first operation where ldshim_dlopen_from differs from
    // dlopen on `t`, it gives what glibc gives once each dlopen that loaded
    // asks for the path glibc found, not the name (so glibc too knows the
    // object only by its path and SONAME).
    bool resolver_is_glibc_given_paths(const GenTree& t) const;
    // A diagnosis, not an excuse: the runtime builds its model at the first
    // dlopen it sees, and must read what the start-up did as glibc did it,
    // whatever the process changed before then.  True when `t` with a first
    // operation that builds the model before any event (dlopen(libc.so.6,
    // RTLD_NOLOAD) from the program: no search, no change) gives exactly
    // glibc's answers, i.e. a difference lies in reading the start-up late.
    bool resolver_is_model_built_late(const GenTree& t) const;
    bool can_use_cache() const { return can_cache_; }
    // The loader's machine: the sysroot's (an arm64 root is built for with
    // Debian's aarch64-linux-gnu cross tools and run under qemu-user), else
    // this machine's.
    Machine machine() const { return machine_; }
    bool can_run_resolver() const { return !ldshim_lib_.empty(); }

private:
    struct Runs;
    std::string stub(const std::string& soname) const;
    std::string build_script(const GenTree& t, const TreePlace& w) const;
    Runs run_all(const GenTree& t, const TreePlace& w, bool with_resolver) const;
    std::string sysroot_;
    std::string ldshim_lib_;
    std::string dir_;
    Machine machine_ = Machine::x86_64;
    std::string cc_, ld_;  // the compiler driver and linker for machine_ against sysroot_
    bool can_cache_ = false;
    mutable std::mutex stub_mu_;
    mutable std::set<std::string> stubs_;
};

// The single-step reductions of a tree, smallest effect last.
std::vector<GenTree> reductions(const GenTree& t);

}  // namespace ldshim::difftest::gen
