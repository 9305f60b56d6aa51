#include "generator.h"

#include <algorithm>
#include <random>
#include <sstream>

namespace ldshim::difftest::gen {
namespace {

// Plain modulo over mt19937_64: the same tree for a seed with any standard
// library (the distributions are implementation-defined).
struct Rng {
    std::mt19937_64 g;
    explicit Rng(std::uint64_t seed) : g(seed) {}
    std::size_t below(std::size_t n) { return static_cast<std::size_t>(g() % n); }
    bool chance(unsigned percent) { return below(100) < percent; }
    template <typename T>
    const T& pick(const std::vector<T>& v) {
        return v[below(v.size())];
    }
};

// One logical library: the name others ask for, its file name, its SONAME.
struct Logical {
    std::string request, file, soname;
};

// The names that depend on the loader's machine.  Each list keeps its
// length across machines, so that a seed draws the same tree shape on both.
struct MachineNames {
    // Directories of a tree named like subdirectories the loader tries.
    std::vector<std::string> dir_names;
    // Where a copy may sit inside a directory: the loader's subdirectories,
    // and one another machine's loader tries (never searched here).
    std::vector<std::string> subdirs;
    std::string system_lib;  // a default directory, as a list element
};

const MachineNames& names_for(Machine m) {
    static const MachineNames x86_64{{"x86_64", "tls", "haswell", "d0/x86_64", "d1/tls", "d0/haswell"},
                                     {"glibc-hwcaps/x86-64-v2/", "glibc-hwcaps/x86-64-v3/", "glibc-hwcaps/x86-64-v4/",
                                      "tls/", "x86_64/", "tls/x86_64/", "haswell/", "tls/haswell/x86_64/"},
                                     "/usr/lib/x86_64-linux-gnu"};
    // glibc on aarch64 has no glibc-hwcaps subdirectories; up to 2.36 the
    // legacy ones are the platform (aarch64), `atomics` (HWCAP_ATOMICS) and
    // tls.
    static const MachineNames aarch64{{"aarch64", "tls", "atomics", "d0/aarch64", "d1/tls", "d0/atomics"},
                                      {"glibc-hwcaps/x86-64-v2/", "atomics/", "aarch64/atomics/", "tls/", "aarch64/",
                                       "tls/aarch64/", "tls/atomics/", "tls/aarch64/atomics/"},
                                      "/usr/lib/aarch64-linux-gnu"};
    return m == Machine::aarch64 ? aarch64 : x86_64;
}

// What generation draws from: the directories, the logical libraries, the
// files placed so far.
struct Shape {
    const MachineNames* names = nullptr;
    std::vector<std::string> dirs;
    std::vector<std::string> spellings;  // dirs, and links to them: what lists may name
    std::vector<Logical> logicals;
    std::vector<std::string> lib_files;
};

std::string dirname_of(const std::string& rel) {
    auto slash = rel.rfind('/');
    return slash == std::string::npos ? std::string() : rel.substr(0, slash);
}

// "$ORIGIN/../../dK" from an object in `owner_dir` (tree-relative) to `target`.
std::string origin_to(Rng& r, const std::string& owner_dir, const std::string& target) {
    std::string s = r.chance(50) ? "$ORIGIN/" : "${ORIGIN}/";
    if (!owner_dir.empty())
        for (std::size_t i = 0, n = std::count(owner_dir.begin(), owner_dir.end(), '/') + 1; i < n; ++i) s += "../";
    return s + target;
}

// The same directory under another spelling, as people write them in
// RPATHs: "." and "dir/.." steps (dir existing, missing or a regular file),
// doubled slashes, a trailing "/" or "/.".  The loader keeps the name as
// written (each spelling is its own pool entry), the kernel resolves it.
std::string respell(Rng& r, const Shape& s, std::string dir) {
    for (std::size_t n = 1 + r.below(2); n > 0; --n) {
        std::vector<std::size_t> slashes;
        for (std::size_t i = 0; i < dir.size(); ++i)
            if (dir[i] == '/') slashes.push_back(i);
        std::size_t roll = r.below(100);
        std::string step = roll < 25 ? "/./" : roll < 45 ? "//" : roll < 60 ? "/m1/../" : roll < 65 ? "/afile/../" : "";
        if (step.empty()) step = "/" + r.pick(s.spellings) + "/../";
        if (r.chance(25) || slashes.empty())
            dir += r.chance(50) ? "/." : step.substr(0, step.size() - 1);  // trailing
        else
            dir.replace(r.pick(slashes), 1, step);
    }
    return dir;
}

// One element of an RPATH, RUNPATH or LD_LIBRARY_PATH list.
std::string element(Rng& r, const Shape& s, const std::string& owner_dir) {
    const std::string& d = r.pick(s.spellings);
    std::size_t roll = r.below(100);
    if (roll < 10) return respell(r, s, "@/" + d);
    if (roll < 15) return respell(r, s, origin_to(r, owner_dir, d));
    if (roll < 32) return "@/" + d;
    if (roll < 36) return "@/" + d + "/";
    if (roll < 50) return origin_to(r, owner_dir, d);
    if (roll < 58) return "@/m" + std::to_string(r.below(3));
    if (roll < 62) return "/nonexistent-ldshim-gen/x";
    if (roll < 68) return "";
    if (roll < 72) return d;  // relative to the working directory
    if (roll < 75) return r.chance(50) ? "$ORIGIN" : "${ORIGIN}";
    if (roll < 78) return r.chance(50) ? s.names->system_lib : "/lib";
    if (roll < 81) return "@/afile";  // a regular file, absolute: pruned
    if (roll < 83) return "afile";    // relative: ENOTDIR abandons the list
    if (roll < 84) return "@/" + d + "/$LIB";
    if (roll < 86) return "@/" + d + (r.chance(50) ? "/$PLATFORM" : "/${PLATFORM}");  // x86_64, haswell, aarch64
    if (roll < 90) return "@/" + d + "/tls";
    return origin_to(r, owner_dir, d) + "/";
}

PathList path_list(Rng& r, const Shape& s, const std::string& owner_dir) {
    std::vector<std::string> v;
    for (std::size_t i = 0, n = 1 + r.below(4); i < n; ++i) v.push_back(element(r, s, owner_dir));
    if (r.chance(10)) v.push_back(r.pick(v));  // a duplicate within the list
    return v;
}

// A name to ask for: mostly a logical library, sometimes one nobody has.
std::string wanted(Rng& r, const Shape& s, unsigned missing_percent) {
    if (r.chance(missing_percent)) return "libqgmiss" + std::to_string(r.below(3)) + ".so";
    const Logical& l = r.pick(s.logicals);
    return r.chance(8) ? l.file : l.request;
}

void add_paths(Rng& r, const Shape& s, const std::string& owner_dir, PathList& rpath, PathList& runpath,
               unsigned rpath_percent, unsigned runpath_percent) {
    std::size_t roll = r.below(100);
    if (roll < rpath_percent)
        rpath = path_list(r, s, owner_dir);
    else if (roll < rpath_percent + runpath_percent)
        runpath = path_list(r, s, owner_dir);
}

Shape make_shape(Rng& r, Machine m) {
    Shape s;
    s.names = &names_for(m);
    for (std::size_t i = 0, n = 2 + r.below(3); i < n; ++i) s.dirs.push_back("d" + std::to_string(i));
    if (r.chance(20)) s.dirs.push_back("d0/sub");
    // A directory named like a subdirectory the loader tries in every
    // directory: in a list it is a pool entry of its own, and a
    // subdirectory of another entry as well.
    if (r.chance(25)) s.dirs.push_back(r.pick(s.names->dir_names));
    if (r.chance(15)) s.dirs.push_back("d1/e");
    s.spellings = s.dirs;
    for (std::size_t i = 0, n = 2 + r.below(5); i < n; ++i) {
        std::string base = "libqg" + std::to_string(i) + ".so";
        std::size_t roll = r.below(100);
        if (roll < 75)
            s.logicals.push_back({base, base, base});
        else if (roll < 90)
            s.logicals.push_back({base + ".1", base, base + ".1"});
        else
            s.logicals.push_back({base, base, ""});
    }
    return s;
}

// Where a copy of a library goes: a directory, sometimes one of the
// subdirectories the loader tries inside each directory.
std::string placement(Rng& r, const Shape& s, const Logical& l) {
    std::string sub = r.chance(60) ? "" : r.pick(s.names->subdirs);
    return r.pick(s.dirs) + "/" + sub + l.file;
}

void make_libs(Rng& r, Shape& s, GenTree& t) {
    for (const Logical& l : s.logicals) {
        std::size_t roll = r.below(100), copies = roll < 55 ? 1 : roll < 85 ? 2 : 3;
        for (std::size_t c = 0; c < copies; ++c) {
            // Most first copies sit in d0, the directory most lists name
            // (make_reachable), so that most trees get past startup.
            std::string file = c == 0 && r.chance(70) ? "d0/" + l.file : placement(r, s, l);
            if (std::find(s.lib_files.begin(), s.lib_files.end(), file) != s.lib_files.end()) continue;
            GenLibrary lib{file, l.soname, {}, std::nullopt, std::nullopt};
            // Another path to the same file: the loader's file-identity rule.
            if (c > 0 && r.chance(12)) lib.symlink_to = t.libs.back().file;
            for (std::size_t i = 0, n = r.below(3); i < n; ++i) lib.needed.push_back(wanted(r, s, 3));
            add_paths(r, s, dirname_of(file), lib.rpath, lib.runpath, 35, 25);
            lib.nodeflib = r.chance(4);
            s.lib_files.push_back(file);
            t.libs.push_back(std::move(lib));
        }
    }
}

// "@/FILE", its directory sometimes spelled another way.
std::string spelled_file(Rng& r, const Shape& s, const std::string& file) {
    if (!r.chance(30)) return "@/" + file;
    auto slash = file.rfind('/');
    return respell(r, s, "@/" + file.substr(0, slash)) + file.substr(slash);
}

void make_env(Rng& r, const Shape& s, GenTree& t) {
    std::string exe_dir = dirname_of(t.exe);
    if (r.chance(40)) {
        t.ld_library_path = path_list(r, s, exe_dir);
        t.llp_sep = r.chance(15) ? ';' : ':';
    }
    if (r.chance(30)) {
        t.preload_sep = r.chance(50) ? ' ' : ':';
        for (std::size_t i = 0, n = 1 + r.below(2); i < n; ++i) {
            std::size_t roll = r.below(100);
            if (roll < 50)
                t.preload.push_back(r.pick(s.logicals).request);
            else if (roll < 70)
                t.preload.push_back("libqgnope.so");
            else if (roll < 82)
                t.preload.push_back(spelled_file(r, s, r.pick(s.lib_files)));
            else if (roll < 87)
                t.preload.push_back("@/m0/libqgnope.so");
            else if (roll < 92)
                t.preload.push_back("@/" + t.exe);  // a PIE: found, then refused
            else if (roll < 96)
                t.preload.push_back("@/afile");  // not ELF
            else
                t.preload.push_back("@/d0");  // a directory
        }
    }
}

// Usually name d0 in a list that covers the dependencies: the program's
// RPATH or LD_LIBRARY_PATH (a RUNPATH serves only the program's own needs).
void make_reachable(Rng& r, GenTree& t) {
    if (!r.chance(75)) return;
    std::string home = r.chance(70) ? "@/d0" : origin_to(r, dirname_of(t.exe), "d0");
    std::vector<PathList*> lists;
    for (PathList* pl : {&t.exe_rpath, &t.ld_library_path, &t.exe_runpath})
        if (*pl) lists.push_back(pl);
    PathList& pl = lists.empty() ? (r.chance(70) ? t.exe_rpath : t.ld_library_path) : *lists[r.below(lists.size())];
    if (!pl) pl.emplace();
    pl->insert(pl->begin() + static_cast<std::ptrdiff_t>(r.below(pl->size() + 1)), home);
}

// The files of every copy of the library a request name stands for.
std::vector<std::string> copies_of(const Shape& s, const GenTree& t, const std::string& name) {
    std::vector<std::string> files;
    for (const auto& l : t.libs) {
        auto slash = l.file.rfind('/');
        std::string base = l.file.substr(slash + 1);
        if (l.soname == name || base == name || "@/" + l.file == name) files.push_back(l.file);
    }
    (void)s;
    return files;
}

// Callers are mostly objects that are probably loaded by then: the
// program's dependencies, preloads, earlier dlopen targets.
void make_ops(Rng& r, const Shape& s, GenTree& t) {
    std::vector<std::string> likely;
    // A name's copies, and two levels of what they need: a dependency of a
    // dlopen'ed object calls with the loader chain above it.
    auto note = [&](const std::string& name) {
        std::vector<std::string> level = copies_of(s, t, name);
        for (int depth = 0; depth < 3 && !level.empty(); ++depth) {
            std::vector<std::string> next;
            for (const auto& f : level) {
                likely.push_back(f);
                for (const auto& l : t.libs)
                    if (l.file == f)
                        for (const auto& n : l.needed)
                            for (auto& g : copies_of(s, t, n)) next.push_back(g);
            }
            level = std::move(next);
        }
    };
    for (const auto& n : t.exe_needed) note(n);
    for (const auto& n : t.preload) note(n);
    for (std::size_t i = 0, n = 2 + r.below(6); i < n; ++i) {
        GenOp op;
        op.kind = r.chance(20) ? 'n' : 'o';
        std::size_t who = r.below(100);
        // A chain: the object the previous call loaded calls next, so that
        // the loader chain of a dlopen'ed caller (its RPATHs) grows with it.
        std::vector<std::string> last = t.ops.empty() ? std::vector<std::string>{} : copies_of(s, t, t.ops.back().name);
        if (who >= 45) op.caller = who < 85 && !likely.empty() ? r.pick(likely) : r.pick(s.lib_files);
        if (!last.empty() && r.chance(35)) op.caller = r.pick(last);
        std::size_t roll = r.below(100);
        if (roll < 15 && !t.ops.empty())
            op.name = r.pick(t.ops).name;  // a second dlopen of the same name
        else if (roll < 22)
            op.name = spelled_file(r, s, r.pick(s.lib_files));
        else if (roll < 25)  // relative to the working directory, the tree's root
            op.name = spelled_file(r, s, r.pick(s.lib_files)).substr(2);
        else if (roll < 30)  // $ORIGIN is the caller's
            op.name = origin_to(r, dirname_of(op.caller.empty() ? t.exe : op.caller), r.pick(s.lib_files));
        else
            op.name = wanted(r, s, 18);
        note(op.name);
        t.ops.push_back(std::move(op));
    }
}

std::string join(const std::vector<std::string>& v, char sep) {
    std::string s;
    for (std::size_t i = 0; i < v.size(); ++i) s.append(i ? std::string(1, sep) : "").append(v[i]);
    return s;
}

// A list element relative to the working directory, for a chdir to move:
// "d0", "./d0", "../d0", "../../d1/e".
std::string relative_element(Rng& r, const Shape& s) {
    static const std::vector<std::string> ups{"", "./", "../", "../../"};
    return r.pick(ups) + r.pick(s.spellings);
}

// Relative elements in one or two of the lists glibc fixed at start-up
// (LD_LIBRARY_PATH) or reads from the object (RPATH, RUNPATH).
void add_relative_elements(Rng& r, const Shape& s, GenTree& t) {
    for (std::size_t i = 0, n = r.below(3); i < n; ++i) {
        std::size_t which = r.below(t.libs.size() + 3);
        PathList& pl = which < t.libs.size()    ? (r.chance(50) ? t.libs[which].rpath : t.libs[which].runpath)
                       : which == t.libs.size() ? (t.exe_runpath ? t.exe_runpath : t.exe_rpath)
                                                : t.ld_library_path;
        if (!pl) pl.emplace();
        pl->insert(pl->begin() + static_cast<std::ptrdiff_t>(r.below(pl->size() + 1)), relative_element(r, s));
    }
}

std::string base_name(const std::string& path) { return path.substr(path.rfind('/') + 1); }

// The missing directories (m0..m2) the tree's lists name.
std::vector<std::string> named_missing(const GenTree& t) {
    std::vector<std::string> out;
    auto scan = [&](const PathList& pl) {
        if (pl)
            for (const auto& e : *pl)
                if (e.size() >= 4 && e.starts_with("@/m") && e.find('/', 2) == std::string::npos)
                    out.push_back(e.substr(2));
    };
    for (const auto& l : t.libs) {
        scan(l.rpath);
        scan(l.runpath);
    }
    for (const PathList* pl : {&t.exe_rpath, &t.exe_runpath, &t.ld_library_path}) scan(*pl);
    return out;
}

// A directory an event creates, copies into or changes to: the tree's own,
// ones its lists name but nobody made (m0..m2; glibc remembers them missing
// once it has looked), subdirectories the loader tries, a tree directory
// inside another (for relative elements after a chdir).
std::string event_dir(Rng& r, const Shape& s, const GenTree& t) {
    std::size_t roll = r.below(100);
    if (roll < 30) return r.pick(s.dirs);
    if (roll < 55) {
        std::vector<std::string> named = named_missing(t);
        return !named.empty() && r.chance(75) ? r.pick(named) : "m" + std::to_string(r.below(3));
    }
    if (roll < 80) {
        std::string sub = r.pick(s.names->subdirs);
        return r.pick(s.dirs) + "/" + sub.substr(0, sub.size() - 1);
    }
    return r.pick(s.dirs) + "/" + r.pick(s.dirs);
}

// mkdir of `dir` and each missing parent, as `mkdir -p` would (an existing
// one answers EEXIST, which both runs print alike).
void make_dirs(const std::string& dir, std::vector<GenOp>& out) {
    for (std::size_t at = dir.find('/'); at != std::string::npos; at = dir.find('/', at + 1))
        out.push_back({'M', "", "@/" + dir.substr(0, at)});
    out.push_back({'M', "", "@/" + dir});
}

// The names of the libraries in `dir` (tree-relative), as a dlopen or a
// search asks for them.
std::vector<std::string> names_in(const GenTree& t, const std::string& dir) {
    std::vector<std::string> names;
    for (const auto& l : t.libs)
        if (dirname_of(l.file) == dir) {
            names.push_back(base_name(l.file));
            if (!l.soname.empty()) names.push_back(l.soname);
        }
    return names;
}

// Paths relative to the working directory `dir` (tree-relative) of the
// libraries below it and in the tree: "./sub/libx.so", "sub/libx.so",
// "../d0/libx.so".
std::vector<std::string> relative_names(const GenTree& t, const std::string& dir) {
    std::vector<std::string> names;
    for (const auto& l : t.libs) {
        if (dir.empty() || dir == ".") names.push_back("./" + l.file);
        if (!dir.empty() && l.file.starts_with(dir + "/")) {
            names.push_back(l.file.substr(dir.size() + 1));
            names.push_back("./" + l.file.substr(dir.size() + 1));
        }
        if (!dir.empty() && dir.find('/') == std::string::npos) names.push_back("../" + l.file);
    }
    return names;
}

// The environment: one of the variables glibc reads at start-up only,
// changed in one of the ways a program can.
GenOp env_event(Rng& r, const Shape& s, const GenTree& t, std::vector<std::string>& focus) {
    static const std::vector<std::string> vars{"LD_LIBRARY_PATH", "LD_PRELOAD", "LD_ORIGIN_PATH"};
    const std::string& var = r.pick(vars);
    std::string value =
        var == "LD_PRELOAD" ? r.pick(s.logicals).request : join(*path_list(r, s, dirname_of(t.exe)), ':');
    std::string how(1, "supcr"[r.below(5)]);
    std::string arg = how == "u" ? var : how == "c" ? "" : var + "=" + value;
    if (how == "r" && r.chance(25)) arg.clear();  // an empty environment
    focus.push_back(r.pick(s.logicals).request);
    return {'E', how, arg};
}

// Files and directories: made, filled, removed or renamed away.
void file_event(Rng& r, const Shape& s, const GenTree& t, std::vector<GenOp>& out, std::vector<std::string>& focus) {
    if (r.chance(60)) {
        std::string dir = event_dir(r, s, t);
        if (r.chance(70)) make_dirs(dir, out);
        const std::string& file = r.pick(s.lib_files);
        std::string dest = r.chance(60) ? base_name(file) : r.pick(s.logicals).file;
        out.push_back({'P', "@/" + file, "@/" + dir + "/" + dest});
        focus = {dest, "@/" + dir + "/" + dest};
        return;
    }
    bool file = r.chance(65);
    std::string what = file ? r.pick(s.lib_files) : r.pick(s.dirs);
    if (r.chance(50))
        out.push_back({'R', "", "@/" + what});
    else
        out.push_back({'V', "@/" + what, "@/" + (r.chance(50) ? what + ".away" : "m" + std::to_string(r.below(3)))});
    focus = file ? names_in(t, dirname_of(what)) : names_in(t, what);
}

// The cache replaced (as ldconfig does) or removed; after a removal, often
// a call that needs the cache and then the new cache in place (glibc keeps
// a cache it failed to open failed).
void cache_event(Rng& r, const Shape& s, GenTree& t, std::vector<GenOp>& out, std::vector<std::string>& focus) {
    if (t.cache_dirs.empty()) t.cache_dirs.push_back(r.pick(s.spellings));
    t.cache_in_etc = true;
    if (t.cache_next_dirs.empty())
        for (const auto& d : s.spellings)
            if (r.chance(50)) t.cache_next_dirs.push_back(d);
    for (const auto& d : r.chance(70) ? t.cache_next_dirs : t.cache_dirs)
        for (auto& n : names_in(t, d)) focus.push_back(std::move(n));
    const GenOp install{'P', "@/etc/ld.so.cache.1", "@/etc/ld.so.cache"};
    if (r.chance(70)) {
        out.push_back(install);
        return;
    }
    out.push_back({'R', "", "@/etc/ld.so.cache"});
    if (r.chance(50)) {
        out.push_back({'o', "", r.pick(s.logicals).request});
        out.push_back(install);
    }
}

// One event, and the calls that would see what it changed (mostly asking
// for what it changed: `focus`).
std::vector<GenOp> one_event(Rng& r, const Shape& s, GenTree& t, bool with_cache) {
    std::vector<GenOp> out;
    std::vector<std::string> focus;
    std::size_t roll = r.below(100);
    if (roll < 22) {
        out.push_back(env_event(r, s, t, focus));
    } else if (roll < 42) {
        static const std::vector<std::string> fixed{"..", "@/.", "@/m0", "@/afile", "@/bin", "."};
        std::string dir = r.chance(60) ? r.pick(s.spellings) : r.pick(fixed);
        focus = relative_names(t, dir.starts_with("@/") ? dir.substr(2) : dir);
        if (r.chance(50) && dir.find('.') != 0 && dir[0] != '@') dir = "@/" + dir;
        out.push_back({'D', "", dir});
    } else if (roll < 74) {
        file_event(r, s, t, out, focus);
    } else if (roll < 86 && with_cache) {
        cache_event(r, s, t, out, focus);
    } else {
        // Two threads open the same name from the same caller: either order
        // gives both the same object, so the output is deterministic.
        std::string caller = t.ops.empty() || r.chance(40) ? "" : r.pick(t.ops).caller;
        out.push_back({'t', caller, wanted(r, s, 10)});
    }
    for (std::size_t i = 0, n = r.below(4); i < n; ++i) {
        std::string name = !focus.empty() && r.chance(65) ? r.pick(focus) : wanted(r, s, 10);
        if (r.chance(15)) name = (r.chance(50) ? "./" : "") + r.pick(s.lib_files);
        out.push_back({r.chance(15) ? 'n' : 'o', r.chance(70) || t.ops.empty() ? "" : r.pick(t.ops).caller, name});
    }
    return out;
}

// dlclose of an earlier open, then maybe the same open again; the open is
// sometimes RTLD_NODELETE.
void close_and_reopen(Rng& r, GenTree& t) {
    std::vector<std::size_t> opens;
    for (std::size_t i = 0; i < t.ops.size(); ++i)
        if (t.ops[i].kind == 'o' || t.ops[i].kind == 'z') opens.push_back(i);
    if (opens.empty()) return;
    std::size_t j = r.pick(opens);
    if (r.chance(35)) t.ops[j].kind = 'z';
    GenOp open = t.ops[j];
    std::size_t at = j + 1 + r.below(t.ops.size() - j);
    t.ops.insert(t.ops.begin() + static_cast<std::ptrdiff_t>(at), GenOp{'c', open.caller, open.name});
    if (r.chance(70)) {
        open.kind = r.chance(25) ? 'n' : 'o';
        std::size_t again = at + 1 + r.below(t.ops.size() - at);
        t.ops.insert(t.ops.begin() + static_cast<std::ptrdiff_t>(again), open);
    }
}

// Process events among the calls, from a stream of their own.
void make_events(std::uint64_t seed, const Shape& s, GenTree& t, bool with_cache) {
    Rng r(seed ^ 0x6576656e7473ULL);
    add_relative_elements(r, s, t);
    for (std::size_t i = 0, n = 1 + r.below(4); i < n; ++i) {
        if (r.chance(15)) {
            close_and_reopen(r, t);
            continue;
        }
        std::vector<GenOp> ev = one_event(r, s, t, with_cache);
        auto at = t.ops.begin() + static_cast<std::ptrdiff_t>(r.below(t.ops.size() + 1));
        t.ops.insert(at, ev.begin(), ev.end());
    }
}

}  // namespace

GenTree generate(std::uint64_t seed, bool with_cache, Machine machine, bool events) {
    Rng r(seed);
    GenTree t;
    t.seed = seed;
    Shape s = make_shape(r, machine);
    t.dirs = s.dirs;
    t.files = {"afile"};
    // The same directory under another name: "l0 -> d1/e", say.  Through a
    // link, "l0/.." is d1, not the tree's root.
    if (r.chance(20)) {
        t.dir_links.emplace_back("l0", r.pick(s.dirs));
        s.spellings.push_back("l0");
    }
    if (r.chance(40)) t.exe = "bin/prog";
    make_libs(r, s, t);
    for (std::size_t i = 0, n = r.below(4); i < n; ++i) {
        std::string w = wanted(r, s, 3);
        if (std::find(t.exe_needed.begin(), t.exe_needed.end(), w) == t.exe_needed.end()) t.exe_needed.push_back(w);
    }
    add_paths(r, s, dirname_of(t.exe), t.exe_rpath, t.exe_runpath, 45, 30);
    t.exe_nodeflib = r.chance(4);
    make_env(r, s, t);
    make_reachable(r, t);
    if (with_cache && r.chance(35)) {
        for (const auto& d : s.spellings)
            if (r.chance(50)) t.cache_dirs.push_back(r.chance(25) ? respell(r, s, d) : d);
        if (t.cache_dirs.empty()) t.cache_dirs.push_back(s.dirs[0]);
    }
    make_ops(r, s, t);
    if (events) make_events(seed, s, t, with_cache);
    return t;
}

namespace {

std::string describe_op(const GenTree& t, const GenOp& op) {
    const std::string& caller = op.caller.empty() ? t.exe : op.caller;
    switch (op.kind) {
        case 'o': return "dlopen(" + op.name + ") from " + caller;
        case 'n': return "dlopen-noload(" + op.name + ") from " + caller;
        case 'z': return "dlopen-nodelete(" + op.name + ") from " + caller;
        case 't': return "dlopen(" + op.name + ") from " + caller + " in two threads at once";
        case 'c': return "dlclose(the latest dlopen(" + op.name + ") from " + caller + ")";
        case 'D': return "chdir(" + op.name + ")";
        case 'M': return "mkdir(" + op.name + ")";
        case 'R': return "remove(" + op.name + ")";
        case 'P': return "copy(" + op.caller + " -> " + op.name + ", written new then renamed)";
        case 'V': return "rename(" + op.caller + " -> " + op.name + ")";
    }
    switch (op.caller.empty() ? '?' : op.caller[0]) {  // 'E'
        case 's': return "setenv(" + op.name + ")";
        case 'u': return "unsetenv(" + op.name + ")";
        case 'p': return "putenv(" + op.name + ")";
        case 'c': return "clearenv()";
        case 'r': return "environ = {" + op.name + "}";
    }
    return "?";
}

}  // namespace

std::string describe(const GenTree& t) {
    std::ostringstream o;
    auto paths = [&](const PathList& rp, const PathList& rn) {
        if (rp) o << " RPATH='" << join(*rp, ':') << "'";
        if (rn) o << " RUNPATH='" << join(*rn, ':') << "'";
    };
    o << "seed " << t.seed << " (@ = the tree's root; the program runs in @)\n";
    o << "  exe " << t.exe << " needs [" << join(t.exe_needed, ' ') << "]";
    paths(t.exe_rpath, t.exe_runpath);
    if (t.exe_nodeflib) o << " NODEFLIB";
    o << "\n";
    for (const auto& l : t.libs) {
        o << "  lib " << l.file;
        if (!l.symlink_to.empty()) o << " -> symbolic link to " << l.symlink_to << " (its other fields unused)";
        o << " soname=" << (l.soname.empty() ? "(none)" : l.soname) << " needs [" << join(l.needed, ' ') << "]";
        paths(l.rpath, l.runpath);
        if (l.nodeflib) o << " NODEFLIB";
        o << "\n";
    }
    if (t.ld_library_path) o << "  LD_LIBRARY_PATH='" << join(*t.ld_library_path, t.llp_sep) << "'\n";
    if (!t.preload.empty()) o << "  LD_PRELOAD='" << join(t.preload, t.preload_sep) << "'\n";
    if (!t.cache_dirs.empty()) o << "  private ld.so.cache over: " << join(t.cache_dirs, ' ') << "\n";
    if (t.cache_in_etc)
        o << "  (as @/etc/ld.so.cache, @/etc over /etc; @/etc/ld.so.cache.1 over: " << join(t.cache_next_dirs, ' ')
          << ")\n";
    for (const auto& [link, target] : t.dir_links) o << "  dir " << link << " -> symbolic link to " << target << "\n";
    o << "  ops:";
    for (const auto& op : t.ops) o << " " << describe_op(t, op) << ";";
    o << "\n";
    return o.str();
}

std::vector<GenTree> reductions(const GenTree& t) {
    std::vector<GenTree> out;
    auto with = [&](auto&& edit) {
        GenTree c = t;
        edit(c);
        out.push_back(std::move(c));
    };
    GenTree probe = t;  // the getters hand out mutable lists; read them from a copy
    auto each_list = [&](auto&& get, std::size_t count) {
        for (std::size_t i = 0; i < count; ++i) {
            const PathList& pl = get(probe, i);
            if (!pl) continue;
            with([&](GenTree& c) { get(c, i).reset(); });
            for (std::size_t e = 0; e < pl->size(); ++e)
                with([&](GenTree& c) { get(c, i)->erase(get(c, i)->begin() + static_cast<std::ptrdiff_t>(e)); });
        }
    };
    for (std::size_t i = 0; i < t.libs.size(); ++i) with([&](GenTree& c) { c.libs.erase(c.libs.begin() + i); });
    for (std::size_t i = 0; i < t.ops.size(); ++i) with([&](GenTree& c) { c.ops.erase(c.ops.begin() + i); });
    // Two threads down to one, RTLD_NODELETE down to a plain dlopen: whether
    // the difference needs them.
    for (std::size_t i = 0; i < t.ops.size(); ++i)
        if (t.ops[i].kind == 't' || t.ops[i].kind == 'z') with([&](GenTree& c) { c.ops[i].kind = 'o'; });
    if (!t.cache_dirs.empty())
        with([](GenTree& c) {
            c.cache_dirs.clear();
            c.cache_next_dirs.clear();
            c.cache_in_etc = false;
        });
    for (std::size_t i = 0; i < t.dir_links.size(); ++i)
        with([&](GenTree& c) { c.dir_links.erase(c.dir_links.begin() + static_cast<std::ptrdiff_t>(i)); });
    for (std::size_t i = 0; i < t.preload.size(); ++i)
        with([&](GenTree& c) { c.preload.erase(c.preload.begin() + i); });
    for (std::size_t i = 0; i < t.exe_needed.size(); ++i)
        with([&](GenTree& c) { c.exe_needed.erase(c.exe_needed.begin() + i); });
    for (std::size_t l = 0; l < t.libs.size(); ++l)
        for (std::size_t i = 0; i < t.libs[l].needed.size(); ++i)
            with([&](GenTree& c) { c.libs[l].needed.erase(c.libs[l].needed.begin() + i); });
    // Lists: 0..n-1 the libraries' RPATH/RUNPATH, n the program's, n+1 LD_LIBRARY_PATH.
    auto list_at = [](bool runpath) {
        return [runpath](GenTree& c, std::size_t i) -> PathList& {
            if (i < c.libs.size()) return runpath ? c.libs[i].runpath : c.libs[i].rpath;
            if (i == c.libs.size()) return runpath ? c.exe_runpath : c.exe_rpath;
            return c.ld_library_path;
        };
    };
    each_list(list_at(false), t.libs.size() + 2);
    each_list(list_at(true), t.libs.size() + 1);  // no RUNPATH twin of LD_LIBRARY_PATH
    if (t.exe != "prog") with([](GenTree& c) { c.exe = "prog"; });
    if (t.exe_nodeflib) with([](GenTree& c) { c.exe_nodeflib = false; });
    for (std::size_t l = 0; l < t.libs.size(); ++l) {
        if (t.libs[l].nodeflib) with([&](GenTree& c) { c.libs[l].nodeflib = false; });
        if (!t.libs[l].symlink_to.empty()) with([&](GenTree& c) { c.libs[l].symlink_to.clear(); });
    }
    return out;
}

}  // namespace ldshim::difftest::gen
