// Building a generated tree, running it under the real loader, through
// ldsearch and through the runtime resolver, and comparing the three.
#include "../support/test_machine.h"
#include "generator.h"
#include "harness.h"

#include <glob.h>
#include <gnu/libc-version.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#ifndef LDSEARCH_PATH
#error "LDSEARCH_PATH must name the ldsearch binary under test"
#endif
#ifndef FIXTURE_DIR
#error "FIXTURE_DIR must name tests/differential/fixtures"
#endif
#ifndef LDSHIM_LIB_PATH
#error "LDSHIM_LIB_PATH must name libldshim.so"
#endif

namespace ldshim::difftest::gen {

bool without_return_points() {
    const char* v = getenv("LDSHIM_GEN_RETURN_POINTS");
    return v && std::string(v) == "0";
}

namespace {

// s += " " + word, piecewise: that one expression trips GCC 12's -Wrestrict
// false positive at -O3 (the release build).
void add_word(std::string& s, const std::string& word) {
    s += ' ';
    s += word;
}

std::string join(const std::vector<std::string>& v, char sep) {
    std::string s;
    for (std::size_t i = 0; i < v.size(); ++i) s.append(i ? std::string(1, sep) : "").append(v[i]);
    return s;
}

// "@/" is the tree's root.
std::string rooted(const std::string& s, const std::string& root) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s.compare(i, 2, "@/") == 0) {
            out += root + "/";
            ++i;
        } else {
            out += s[i];
        }
    }
    return out;
}

std::string dirname_of(const std::string& rel) {
    auto slash = rel.rfind('/');
    return slash == std::string::npos ? std::string() : rel.substr(0, slash);
}

// Variables that change the loader's view of the CPU (qemu-user's, for an
// arm64 root) travel to every run.
std::string cpu_env() {
    std::string s;
    for (const char* v : {"GLIBC_TUNABLES", "LD_HWCAP_MASK", "QEMU_CPU", "QEMU_PAGESIZE"})
        if (const char* x = getenv(v)) add_word(s, quote(std::string(v) + "=" + x));
    return s;
}

}  // namespace

// A fresh directory for one tree, removed with it: `path` as the tree's
// programs see it, `host` where this process finds it (the same, unless the
// trees run in a sysroot).
struct TreePlace {
    explicit TreePlace(const std::string& root) : sysroot(root) {
        const char* tmp = getenv("TMPDIR");
        std::string base = sysroot.empty() ? std::string(tmp && *tmp ? tmp : "/tmp") : sysroot + "/tmp";
        std::string tmpl = base + "/ldshim-gen-XXXXXX";
        if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed in " + base);
        host = tmpl;
        path = host.substr(sysroot.size());
    }
    ~TreePlace() {
        if (!getenv("LDSHIM_KEEP_TREES")) sh("rm -rf " + quote(host) + " " + quote(snapshot()));
    }
    // The tree as built, for trees whose events change it: each run starts
    // from it again.
    std::string snapshot() const { return host + ".orig"; }
    TreePlace(const TreePlace&) = delete;
    TreePlace& operator=(const TreePlace&) = delete;
    // A file of the tree, for this process.
    std::string file(const std::string& rel) const { return host + "/" + rel; }
    std::string sysroot, host, path;
};

namespace {

std::string prog_arg(const GenTree& t) { return t.exe.find('/') == std::string::npos ? "./" + t.exe : t.exe; }

// The private cache's file in the tree.
std::string cache_file(const GenTree& t) { return t.cache_in_etc ? "etc/ld.so.cache" : "ld.so.cache"; }

// Whether an event changes the tree's files, so that each run must start
// from the tree as built.
bool changes_files(const GenTree& t) {
    return std::any_of(t.ops.begin(), t.ops.end(), [](const GenOp& op) { return std::strchr("MRPV", op.kind); });
}

// ldsearch models the environment fixed at start-up (an environment event
// changes nothing it sees), but not a chdir, a file changing, a dlclose or
// threads: it is given the operations before the first of those.
std::size_t ldsearch_window(const GenTree& t) {
    std::size_t n = 0;
    while (n < t.ops.size() && std::strchr("onzE", t.ops[n].kind)) ++n;
    return n;
}

// The environment both the program and ldsearch are given.
std::vector<std::pair<std::string, std::string>> tree_env(const GenTree& t, const std::string& root) {
    std::vector<std::pair<std::string, std::string>> env;
    if (t.ld_library_path) env.emplace_back("LD_LIBRARY_PATH", rooted(join(*t.ld_library_path, t.llp_sep), root));
    if (!t.preload.empty()) env.emplace_back("LD_PRELOAD", rooted(join(t.preload, t.preload_sep), root));
    return env;
}

// `body` (a shell command) run in the tree's directory by the loader under
// test, with the tree's private ld.so.cache as /etc/ld.so.cache if it has
// one.  In a sysroot: chrooted, with a /proc (the loader reads the program's
// $ORIGIN from /proc/self/exe), in a mount namespace that ends with the run.
// A cache that events replace is the tree's @/etc/ld.so.cache with @/etc
// bind-mounted over /etc: a file bind-mounted over /etc/ld.so.cache would
// keep its inode, so a new file renamed over it (as ldconfig writes) would
// never show.
std::string in_tree(const GenTree& t, const TreePlace& w, const std::string& body) {
    std::string cache = t.cache_dirs.empty() ? "" : w.file(t.cache_in_etc ? "etc" : "ld.so.cache");
    std::string over = t.cache_in_etc ? "/etc" : "/etc/ld.so.cache";
    std::string inner = "cd " + quote(w.path) + " && exec " + body;
    if (!w.sysroot.empty())
        return "unshare -m sh -c 'mount --make-rprivate / && mount -t proc proc \"$0/proc\" && "
               "{ [ -z \"$1\" ] || mount --bind \"$1\" \"$0$3\"; } && exec chroot \"$0\" /bin/sh -c "
               "\"$2\"' " +
               quote(w.sysroot) + " " + quote(cache) + " " + quote(inner) + " " + quote(over);
    if (cache.empty()) return inner;
    return "unshare -m sh -c 'mount --bind \"$0\" \"$2\" && exec sh -c \"$1\"' " + quote(cache) + " " + quote(inner) +
           " " + quote(over);
}

// The ldsearch under test: this build's, or LDSHIM_GEN_LDSEARCH (in a
// Debian root, the static one linked on this machine, as the release
// tarball ships it: one linked on glibc before 2.34 crashes at start with a
// DST in its own LD_LIBRARY_PATH, glibc bug 23462).
std::string ldsearch() {
    const char* other = getenv("LDSHIM_GEN_LDSEARCH");
    return other && *other ? other : LDSEARCH_PATH;
}

// Redirections for a run, made here (a sysroot need not have /dev): stdin
// from /dev/null, stdout and stderr to the tree's NAME.stdout, NAME.stderr.
std::string redirected(const TreePlace& w, const std::string& name) {
    return " >" + quote(w.file(name + ".stdout")) + " 2>" + quote(w.file(name + ".stderr")) + " </dev/null";
}

// The loader's machine: aarch64 for a root that holds aarch64's loader;
// without a root, the machine the test runs on (under qemu-user, aarch64).
Machine machine_of(const std::string& sysroot) {
    if (sysroot.empty()) return ldshim::testmachine::kThis.machine == EM_AARCH64 ? Machine::aarch64 : Machine::x86_64;
    if (access((sysroot + "/lib/ld-linux-aarch64.so.1").c_str(), F_OK) == 0) return Machine::aarch64;
    return Machine::x86_64;
}

// Debian's cross tools for the machine ("" for this machine's own).
std::string tool_prefix(Machine m) { return m == Machine::aarch64 ? "aarch64-linux-gnu-" : ""; }

// The compiler driver for objects and programs that run on the loader under
// test: this machine's cc, or a cc against a sysroot's glibc: its headers
// (--sysroot), and its crt files and libraries (-B, -L: gcc would take this
// machine's start files, and misses the upstream lib64 layout).
std::string cc_for(const std::string& sysroot, Machine m) {
    std::string driver = m == Machine::aarch64 ? tool_prefix(m) + "gcc" : "cc";
    if (sysroot.empty()) return driver;
    std::string cc = "env -u LIBRARY_PATH " + driver + " --sysroot=" + quote(sysroot);
    for (const char* lib : {"lib64", "lib/x86_64-linux-gnu", "lib/aarch64-linux-gnu"}) {
        std::string usr = sysroot + "/usr/" + lib, top = sysroot + "/" + lib;
        if (access((usr + "/crt1.o").c_str(), F_OK) != 0) continue;
        cc += " -B " + quote(usr + "/") + " -L " + quote(usr) + " -L " + quote(top) + " -Wl,-rpath-link," + quote(top);
        break;
    }
    // A glibc built from source installs no kernel headers, which its own
    // errno.h, fcntl.h and dirent.h include: this machine's stand after the
    // root's headers, so that every glibc header is still the root's.
    if (m == Machine::x86_64 && access((sysroot + "/usr/include/linux/limits.h").c_str(), F_OK) != 0)
        cc += " -idirafter /usr/include -idirafter /usr/include/x86_64-linux-gnu";
    return cc;
}

// Whether the loader under test keeps dlopen in libdl (glibc before 2.34).
bool needs_libdl(const std::string& sysroot) {
    if (sysroot.empty()) return ::strverscmp(gnu_get_libc_version(), "2.34") < 0;
    for (const char* d :
         {"/usr/lib64/libdl.so", "/usr/lib/x86_64-linux-gnu/libdl.so", "/usr/lib/aarch64-linux-gnu/libdl.so"})
        if (access((sysroot + d).c_str(), F_OK) == 0) return true;
    return false;
}

}  // namespace

struct Workshop::Runs {
    std::vector<std::string> real_search, real_out, real_err;
    std::vector<std::string> emu_search, emu_results, emu_err;
    std::vector<std::string> resolver_out;
    std::vector<std::string> diff_out;
    // Every operation under the real loader (real_out when ldsearch is
    // given them all).
    std::vector<std::string> full_out;
    int real_status = 0, emu_status = 0, diff_status = 0, full_status = 0;
    bool ran_resolver = false;
};

Workshop::Workshop(std::string sysroot, std::string ldshim_lib)
    : sysroot_(std::move(sysroot)), ldshim_lib_(ldshim_lib.empty() && sysroot_.empty() ? LDSHIM_LIB_PATH : ldshim_lib) {
    while (sysroot_.size() > 1 && sysroot_.back() == '/') sysroot_.pop_back();
    const char* tmp = getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/ldshim-genshop-XXXXXX";
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    dir_ = tmpl;
    machine_ = machine_of(sysroot_);
    cc_ = cc_for(sysroot_, machine_);
    ld_ = tool_prefix(machine_) + "ld";
    std::string fx = FIXTURE_DIR;
    std::string cmd = "cd " + quote(dir_) + " && mkdir stubs && " + cc_ + " -O1 -fPIC -c -o lib.o " +
                      quote(fx + "/gen_lib.c") + " && " + cc_ + " -O1 -c -o driver.o " + quote(fx + "/gen_driver.c") +
                      " && " + cc_ + " -x c -fPIC -c -o empty.o /dev/null";
    if (sh(cmd) != 0) throw std::runtime_error("cannot build the generator's objects: " + cmd);
    can_cache_ = sh("unshare -m true >/dev/null 2>&1 && test -x " + quote(sysroot_ + "/sbin/ldconfig")) == 0;
}

Workshop::~Workshop() { sh("rm -rf " + quote(dir_)); }

// A library with only a SONAME: linking against it gives a DT_NEEDED entry
// of that name, whatever the tree holds (or lacks), cycles included.
std::string Workshop::stub(const std::string& soname) const {
    std::string path = dir_ + "/stubs/" + soname;
    std::lock_guard<std::mutex> lock(stub_mu_);
    if (stubs_.insert(soname).second) {
        std::string cmd =
            ld_ + " -shared -o " + quote(path) + " -soname " + quote(soname) + " " + quote(dir_ + "/empty.o");
        if (sh(cmd) != 0) throw std::runtime_error("cannot build a stub: " + cmd);
    }
    return path;
}

// One shell script: directories, files, libraries (ld), the program (cc),
// and the private cache (ldconfig: the sysroot's own, in it).  Every path
// written into a file is the tree's path as its programs see it.
std::string Workshop::build_script(const GenTree& t, const TreePlace& w) const {
    const std::string& root = w.path;
    std::string s = "set -e; cd " + quote(w.host) + "; mkdir -p .out";
    for (const auto& d : t.dirs) add_word(s, quote(d));
    for (const auto& f : t.files) s += "; echo not-a-directory > " + quote(f);
    for (const auto& [link, target] : t.dir_links) s += "; ln -s " + quote(target) + " " + quote(link);
    // `pre` "-Wl," for cc ("-Wl,-rpath,DIR"), "" for ld ("-rpath DIR").
    auto paths = [&](const PathList& rp, const PathList& rn, const std::string& pre) {
        std::string a, sep = pre.empty() ? " " : ",";
        if (rp && !rp->empty())
            a += " " + pre + "--disable-new-dtags " + pre + "-rpath" + sep + quote(rooted(join(*rp, ':'), root));
        if (rn && !rn->empty())
            a += " " + pre + "--enable-new-dtags " + pre + "-rpath" + sep + quote(rooted(join(*rn, ':'), root));
        return a;
    };
    for (const auto& l : t.libs) {
        if (auto d = dirname_of(l.file); !d.empty()) s += "; mkdir -p " + quote(d);
        if (!l.symlink_to.empty()) {
            // Relative to the tree, as the file itself is named.
            s += "; ln -s " + quote(root + "/" + l.symlink_to) + " " + quote(l.file);
            continue;
        }
        s += "; " + ld_ + " -shared -o " + quote(l.file) + " " + quote(dir_ + "/lib.o");
        if (l.nodeflib) s += " -z nodefaultlib";
        if (!l.soname.empty()) s += " -soname " + quote(l.soname);
        s += paths(l.rpath, l.runpath, "");
        for (const auto& n : l.needed) add_word(s, quote(stub(n)));
    }
    if (auto d = dirname_of(t.exe); !d.empty()) s += "; mkdir -p " + quote(d);
    s += "; " + cc_ + " -pthread -o " + quote(t.exe) + " " + quote(dir_ + "/driver.o") + " -Wl,--no-as-needed";
    for (const auto& n : t.exe_needed) add_word(s, quote(stub(n)));
    s += paths(t.exe_rpath, t.exe_runpath, "-Wl,");
    if (t.exe_nodeflib) s += " -Wl,-z,nodefaultlib";
    // Before glibc 2.34 the driver's dlopen and dlinfo live in libdl.
    if (needs_libdl(sysroot_)) s += " -ldl";
    auto cache = [&](const std::vector<std::string>& dirs, const std::string& file, const std::string& conf) {
        s += "; printf '%s\\n'";
        for (const auto& d : dirs) add_word(s, quote(root + "/" + d));
        std::string ldconfig = "/sbin/ldconfig -X -C " + quote(file) + " -f " + quote(conf);
        if (!sysroot_.empty())
            ldconfig = "chroot " + quote(sysroot_) + " /sbin/ldconfig -X -C " + quote(root + "/" + file) + " -f " +
                       quote(root + "/" + conf);
        s += " > " + quote(conf) + "; " + ldconfig + " 2>/dev/null";
    };
    if (t.cache_in_etc) s += "; mkdir -p etc";
    if (!t.cache_dirs.empty()) cache(t.cache_dirs, cache_file(t), "ld.so.conf");
    if (t.cache_in_etc) cache(t.cache_next_dirs, "etc/ld.so.cache.1", "ld.so.conf.1");
    if (changes_files(t)) s += "; cp -a . " + quote(w.snapshot());
    return s;
}

namespace {

// The program under the real loader: `env -i VARS PROG OPS` in the tree.
// Returns the exit status; the output lands in .out/NAME.* of the tree.
// `ldshim_lib`: the libldshim the driver hands its resolver operations to.
int run_program(const GenTree& t, const TreePlace& w, const std::string& name, const std::vector<std::string>& ops,
                bool debug, const std::string& ldshim_lib = "") {
    std::string cmd = "env -i PATH=/usr/bin:/bin" + cpu_env();
    for (const auto& [k, v] : tree_env(t, w.path)) add_word(cmd, quote(k + "=" + v));
    if (!ldshim_lib.empty()) cmd += " LDSHIM_LIB=" + quote(ldshim_lib);
    if (!ldshim_lib.empty() && without_return_points()) cmd += " LDSHIM_RETURN_POINTS=0";
    if (debug) cmd += " LD_DEBUG=libs LD_DEBUG_OUTPUT=" + quote(w.path + "/.out/" + name + ".dbg");
    add_word(cmd, quote(prog_arg(t)));
    for (const auto& o : ops) add_word(cmd, quote(o));
    return sh(in_tree(t, w, cmd) + redirected(w, ".out/" + name));
}

std::vector<std::string> debug_search_lines(const std::string& prefix) {
    std::vector<std::string> lines;
    for (const auto& f : read_lines_glob(prefix + ".*"))
        for (auto& l : read_lines(f)) {
            auto tab = l.find(":\t");  // drop the "%10d:\t" PID prefix
            std::string payload = tab == std::string::npos ? l : l.substr(tab + 2);
            if (is_search_line(payload)) lines.push_back(std::move(payload));
        }
    return lines;
}

// The tree as built again, before a run whose events change it.
void restore(const GenTree& t, const TreePlace& w) {
    if (changes_files(t))
        sh("cd " + quote(w.host) + " && find . -mindepth 1 -maxdepth 1 ! -name .out -exec rm -rf {} + && cp -a " +
           quote(w.snapshot() + "/.") + " .");
}

// The driver's operations: "KIND:CALLER:NAME" with the caller's file path
// (absolute: a chdir may come first); events as they are.
std::vector<std::string> driver_ops(const GenTree& t, const std::string& root, bool resolver) {
    std::vector<std::string> ops;
    for (const auto& op : t.ops) {
        char kind = op.kind;
        if (op.is_call() && resolver) kind = static_cast<char>(kind - 'a' + 'A');
        std::string caller = op.is_call() || op.kind == 'c' ? (op.caller.empty() ? "-" : root + "/" + op.caller)
                                                            : rooted(op.caller, root);
        ops.push_back(std::string(1, kind) + ":" + caller + ":" + rooted(op.name, root));
    }
    return ops;
}

// ldsearch with the operations the program really performed (a "SKIP" line
// says the caller was not loaded; no line at all, that startup failed).  In
// a sysroot, `--root` from the tree's directory inside it.
int run_ldsearch(const GenTree& t, const TreePlace& w, const std::vector<std::string>& real_out) {
    const std::string& root = w.path;
    std::string out = w.file(".out/emu");
    std::string cmd = "cd " + quote(w.host) + " && env -i PATH=/usr/bin:/bin" + cpu_env() + " " + quote(ldsearch());
    if (!w.sysroot.empty()) cmd += " --root " + quote(w.sysroot);
    for (const auto& [k, v] : tree_env(t, root)) cmd += " --env " + quote(k + "=" + v);
    if (!t.cache_dirs.empty()) cmd += " --cache " + quote(w.file(cache_file(t)));
    for (std::size_t i = 0; i < t.ops.size() && i < real_out.size(); ++i) {
        const GenOp& op = t.ops[i];
        if (real_out[i] == "SKIP" || !op.is_call()) continue;
        cmd += " --from " + quote(op.caller.empty() ? prog_arg(t) : root + "/" + op.caller);
        cmd += std::string(op.kind == 'n' ? " --dlopen-noload " : " --dlopen ") + quote(rooted(op.name, root));
    }
    cmd += " -- " + quote(prog_arg(t)) + " >" + quote(out + ".stdout") + " 2>" + quote(out + ".stderr") + " </dev/null";
    return sh(cmd);
}

// ldsearch --diff on the same run: the program under the real loader once
// more, every search replayed from the object the loader attributed it to.
// Returns ldsearch's exit status; its report lands in .out/diff.* of the
// tree.  (This machine's loader only: --diff starts the program itself.)
int run_diff(const GenTree& t, const TreePlace& w) {
    std::string cmd = "env -i PATH=/usr/bin:/bin" + cpu_env();
    for (const auto& [k, v] : tree_env(t, w.path)) add_word(cmd, quote(k + "=" + v));
    cmd += " " + quote(ldsearch()) + " --diff -- " + quote(prog_arg(t));
    for (const auto& o : driver_ops(t, w.path, false)) add_word(cmd, quote(o));
    return sh(in_tree(t, w, cmd) + redirected(w, ".out/diff"));
}

// The census of "glibc succeeds, ldshim fails": operations whose line
// under glibc alone is a load ("RESULT L_NAME", for each thread of a 't')
// where ldshim's run printed anything else -- an error, nothing, or
// another object.
std::size_t loaded_by_glibc_alone(const std::vector<std::string>& glibc, const std::vector<std::string>& ldshim) {
    std::size_t n = 0;
    for (std::size_t i = 0; i < glibc.size(); ++i) {
        const std::string& g = glibc[i];
        if (!g.starts_with("RESULT ") || g.starts_with("RESULT (not loaded)")) continue;
        if (i >= ldshim.size() || ldshim[i] != g) ++n;
    }
    return n;
}

std::string section(const char* what, const std::vector<std::string>& a, const std::vector<std::string>& b,
                    const char* la, const char* lb) {
    if (a == b) return "";
    return std::string(what) + ":\n" + unified_diff(a, b, la, lb);
}

}  // namespace

// The real loader (LD_DEBUG=libs), ldsearch and ldsearch --diff on the
// operations ldsearch models (ldsearch_window: these change no file); then,
// when there are more, the real loader on all of them; then the resolver.
Workshop::Runs Workshop::run_all(const GenTree& full, const TreePlace& w, bool with_resolver) const {
    Runs r;
    GenTree t = full;
    t.ops.resize(ldsearch_window(full));
    r.real_status = run_program(t, w, "real", driver_ops(t, w.path, false), true);
    r.real_search = debug_search_lines(w.file(".out/real.dbg"));
    r.real_out = read_lines(w.file(".out/real.stdout"));
    r.real_err = read_lines(w.file(".out/real.stderr"));
    r.emu_status = run_ldsearch(t, w, r.real_out);
    for (auto& l : read_lines(w.file(".out/emu.stdout")))
        (is_search_line(l) ? r.emu_search : r.emu_results).push_back(l);
    r.emu_err = read_lines(w.file(".out/emu.stderr"));
    if (sysroot_.empty()) {
        r.diff_status = run_diff(t, w);
        r.diff_out = read_lines(w.file(".out/diff.stdout"));
        for (auto& l : read_lines(w.file(".out/diff.stderr"))) r.diff_out.push_back(std::move(l));
    }
    r.full_out = r.real_out;
    r.full_status = r.real_status;
    if (t.ops.size() < full.ops.size()) {
        r.full_status = run_program(full, w, "full", driver_ops(full, w.path, false), false);
        r.full_out = read_lines(w.file(".out/full.stdout"));
    }
    if (with_resolver && !ldshim_lib_.empty() && r.full_status == 0) {
        r.ran_resolver = true;
        restore(full, w);
        run_program(full, w, "resolver", driver_ops(full, w.path, true), false, ldshim_lib_);
        r.resolver_out = read_lines(w.file(".out/resolver.stdout"));
    }
    return r;
}

Verdict Workshop::run(const GenTree& t, bool with_resolver) const {
    TreePlace dir(sysroot_);
    Verdict v;
    if (sh(build_script(t, dir) + " >" + quote(dir.file("build.log")) + " 2>&1") != 0) {
        v.broken = true;
        v.report = "the tree did not build:\n" + read_file(dir.file("build.log"));
        return v;
    }
    Runs r = run_all(t, dir, with_resolver);
    // The real run's results and errors in ldsearch's shape: l_names on
    // stdout, the loader's messages and dlerror texts on stderr.
    std::vector<std::string> real_results, real_errors = r.real_err;
    for (const auto& l : r.real_out) {
        if (l.starts_with("RESULT ")) real_results.push_back(l.substr(7));
        if (l.starts_with("ERROR ")) real_errors.push_back(l.substr(6));
    }
    v.report += section("search lines", r.real_search, r.emu_search, "LD_DEBUG=libs", "ldsearch");
    v.report += section("dlopen results", real_results, r.emu_results, "dlopen", "ldsearch");
    // A program that died of a signal after the loader let it start (before
    // glibc 2.30 a PIE in LD_PRELOAD, such as the program's own file, is
    // mapped a second time) ends past what ldsearch models: its searches are
    // compared, its end is not.
    v.crashed = r.real_status > 128;
    if (!v.crashed) {
        v.report += section("errors", real_errors, r.emu_err, "loader", "ldsearch");
        bool real_failed = r.real_status != 0 || real_errors.size() > r.real_err.size() ||
                           std::any_of(r.real_err.begin(), r.real_err.end(),
                                       [](const std::string& e) { return !e.starts_with("ERROR: ld.so: object"); });
        if (real_failed != (r.emu_status != 0))
            v.report += "exit status: program " + std::to_string(r.real_status) + ", ldsearch " +
                        std::to_string(r.emu_status) + "\n";
    }
    if (r.diff_status != 0) {
        v.report += "ldsearch --diff: exit " + std::to_string(r.diff_status) + "\n";
        for (const auto& l : r.diff_out)
            if (!l.starts_with("RESULT ") && !l.starts_with("ERROR ") && l != "SKIP") v.report += "  " + l + "\n";
    }
    if (r.ran_resolver) {
        v.resolver = section("runtime resolver", r.full_out, r.resolver_out, "dlopen", "ldshim_dlopen_from");
        v.glibc_only = loaded_by_glibc_alone(r.full_out, r.resolver_out);
    }
    bool full_crashed = r.full_status > 128;
    if (r.real_status == 2 || r.full_status == 2 ||
        (!full_crashed && !r.full_out.empty() && r.full_out.size() != t.ops.size())) {
        v.broken = true;  // the driver refused its arguments
        v.report += "the driver did not run every operation\n";
    }
    v.started = r.full_out.size() == t.ops.size();
    return v;
}

namespace {

// A run's output with its tree's root written "@", to compare two trees.
std::vector<std::string> unrooted(std::vector<std::string> lines, const std::string& root) {
    for (auto& l : lines)
        for (std::size_t at; (at = l.find(root)) != std::string::npos;) {
            // Rebuilt piecewise: string::replace here trips GCC 12's
            // -Wrestrict false positive at -O3.
            std::string out = l.substr(0, at);
            out += '@';
            out += l.substr(at + root.size());
            l = std::move(out);
        }
    return lines;
}

// `t` with each dlopen that loaded (per the real run's output) asking for
// the l_name glibc gave it.
GenTree asked_by_path(GenTree t, const std::vector<std::string>& real_out, const std::string& root) {
    for (std::size_t i = 0; i < t.ops.size() && i < real_out.size(); ++i) {
        const char kind = t.ops[i].kind;
        const std::string& l = real_out[i];
        if ((kind != 'o' && kind != 'z' && kind != 't') || !l.starts_with("RESULT ")) continue;
        std::string l_name = l.substr(7, l.find(" | ") - 7);  // two threads: the same object twice
        if (l_name.starts_with(root + "/")) {
            std::string name(1, '@');  // appended piecewise (GCC 12's -Wrestrict, as above)
            name += l_name.substr(root.size());
            l_name = std::move(name);
        }
        // The dlcloses of this open name it as it is now asked for.
        const GenOp was = t.ops[i];
        for (std::size_t j = i + 1; j < t.ops.size(); ++j) {
            GenOp& later = t.ops[j];
            if (later.caller != was.caller || later.name != was.name) continue;
            if (later.kind != 'c') break;
            later.name = l_name;
        }
        t.ops[i].name = std::move(l_name);
    }
    return t;
}

// "RESULT ./NAME" or "RESULT DIR/./NAME" for glibc's "RESULT NAME" or
// "RESULT DIR/NAME".
bool spelt_with_a_dot_step(const std::string& glibc, const std::string& ldshim) {
    if (!glibc.starts_with("RESULT ") || !ldshim.starts_with("RESULT ")) return false;
    const std::string g = glibc.substr(7), l = ldshim.substr(7);
    if (l == "./" + g) return true;
    const std::size_t slash = g.rfind('/');
    return slash != std::string::npos && l == g.substr(0, slash) + "/." + g.substr(slash);
}

}  // namespace

bool Workshop::resolver_is_glibc_given_paths(const GenTree& t) const {
    TreePlace asked(sysroot_), by_path(sysroot_);
    if (sh(build_script(t, asked) + " >/dev/null 2>&1") != 0) return false;
    if (run_program(t, asked, "real", driver_ops(t, asked.path, false), false) != 0) return false;
    restore(t, asked);
    run_program(t, asked, "resolver", driver_ops(t, asked.path, true), false, ldshim_lib_);
    auto real_out = read_lines(asked.file(".out/real.stdout"));
    GenTree t2 = asked_by_path(t, real_out, asked.path);
    auto real = unrooted(std::move(real_out), asked.path);
    if (sh(build_script(t2, by_path) + " >/dev/null 2>&1") != 0) return false;
    run_program(t2, by_path, "real", driver_ops(t2, by_path.path, false), false);
    auto ldshim = unrooted(read_lines(asked.file(".out/resolver.stdout")), asked.path);
    auto glibc = unrooted(read_lines(by_path.file(".out/real.stdout")), by_path.path);
    // The first operation where ldshim differs from glibc must be one where
    // it does what glibc does when asked by path; after it the two processes
    // hold different objects, and what follows is that difference's wake.
    // Or that first operation is made from an object only the limit loaded
    // (a dependency glibc found again under the name ldshim's load did not
    // give it): the real process does not hold the caller (SKIP), glibc
    // asked by path holds it as ldshim's process does, and from there each
    // answers from its own objects.
    std::size_t i = 0;
    while (i < real.size() && i < ldshim.size() && real[i] == ldshim[i]) ++i;
    // Or ldshim loaded the same file under an l_name spelt with a "." step:
    // without a return point, a path glibc would not take to the object the
    // model means is handed as "./NAME" or "DIR/./NAME" (c_api.cc,
    // open_found_by_glibc).
    if (i < ldshim.size() && i < real.size() && spelt_with_a_dot_step(real[i], ldshim[i])) return true;
    if (i >= ldshim.size() || i >= glibc.size() || glibc[i] == real[i]) return false;
    const bool as_by_path = ldshim[i] == glibc[i];
    const bool caller_only_the_limit_loaded = real[i] == "SKIP" && ldshim[i] != "SKIP" && glibc[i] != "SKIP";
    bool known = as_by_path || caller_only_the_limit_loaded;
    const char* verbose = std::getenv("LDSHIM_GEN_VERBOSE");
    if (!known && verbose && std::atoi(verbose) >= 2)
        std::printf("not the known limit: glibc asked by path, against ldshim:\n%s",
                    unified_diff(glibc, ldshim, "dlopen(path glibc found)", "ldshim_dlopen_from").c_str());
    return known;
}

bool Workshop::resolver_is_model_built_late(const GenTree& t) const {
    GenTree early = t;
    early.ops.insert(early.ops.begin(), GenOp{'n', "", "libc.so.6"});
    Verdict v = run(early, true);
    return !v.broken && v.started && !v.resolver_differs();
}

GenTree Workshop::shrink(GenTree t, Check which, int budget) const {
    for (bool progress = true; progress && budget > 0;) {
        progress = false;
        for (auto& c : reductions(t)) {
            if (--budget < 0) break;
            Verdict v = run(c, which == Check::resolver);
            if (!v.broken && (which == Check::resolver ? v.resolver_differs() : v.differs())) {
                t = std::move(c);
                progress = true;
                break;
            }
        }
    }
    return t;
}

}  // namespace ldshim::difftest::gen
