// probe_own_loader(): the probe files are a helper whose DT_RPATH is
// "$ORIGIN:/ldshim-probe-platform/$PLATFORM:/ldshim-probe-lib/$LIB:/ldshim-probe-end" and two
// targets it asks glibc for by bare name (host/probe/).  glibc searches the
// helper's own directory with every subdirectory it tries there, in its
// order, so the copy it loads says what it tries:
//  * libldshim-probe-hwcaps.so, also in glibc-hwcaps/x86-64-v{2,3,4}/ on
//    x86-64: the best level the loader has active (the levels are
//    cumulative), after GLIBC_TUNABLES and RHEL 8's backport alike; on
//    aarch64, which has no glibc-hwcaps names, only the baseline copy;
//  * libldshim-probe-legacy.so, also in tls/: whether legacy hwcap
//    subdirectories are searched ("tls" is in every legacy combination);
//  * RTLD_DI_SERINFO of the helper: the loader's own expansions of
//    $PLATFORM and $LIB (the marker elements, never searched: both names
//    are always found in the first element).
#include "host/self_probe.h"

#include "host/libc.h"
#include "loader/loader_config.h"
#include "loader/paths.h"

#include <dlfcn.h>
#include <link.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string_view>

namespace ldshim::host {

namespace {

constexpr std::string_view kPlatformMarker = "/ldshim-probe-platform/";
constexpr std::string_view kLibMarker = "/ldshim-probe-lib/";

constexpr std::string_view kProbeSubdir = "/ldshim/probe";
constexpr std::string_view kHelper = "/libldshim-probe.so";

std::string dir_of(const std::string& path) { return std::string(loader::directory_of(path)); }

void add_once(std::vector<std::string>& dirs, std::string dir) {
    for (const auto& d : dirs)
        if (d == dir) return;
    dirs.push_back(std::move(dir));
}

// Where LIBDIR/ldshim/probe may be, in the order tried: beside the path the
// object holding this code (libldshim.so) was loaded under (glibc's $ORIGIN
// of it), then beside each symbolic link that path leads through, one
// readlink at a time (a package view's link to a module tree's link to the
// file), then beside the file itself (realpath).  An install reached
// through links keeps its probe next to the real file.
std::vector<std::string> library_dirs(std::string* loaded) {
    std::vector<std::string> dirs;
    Dl_info info{};
    if (!dladdr(reinterpret_cast<void*>(&library_dirs), &info) || !info.dli_fname || !*info.dli_fname) return dirs;
    std::string path = info.dli_fname;
    *loaded = path;
    add_once(dirs, dir_of(path));
    char buf[4096];
    for (int hop = 0; hop < 40; ++hop) {  // glibc's MAXSYMLINKS
        ssize_t n = readlink(path.c_str(), buf, sizeof buf - 1);
        if (n <= 0) break;
        std::string target(buf, static_cast<std::size_t>(n));
        path = target.starts_with('/') ? target : dir_of(path) + "/" + target;
        add_once(dirs, dir_of(path));
    }
    if (realpath(info.dli_fname, buf)) add_once(dirs, dir_of(buf));
    return dirs;
}

// LIBDIR/ldshim/probe: LDSHIM_PROBE_DIR for a program that links ldshim
// statically, else the first of library_dirs() that holds the helper.
// Empty, with what was looked for and where in *missing, when none does.
std::string probe_dir(std::string* missing) {
    const char* env = getauxval(AT_SECURE) ? nullptr : std::getenv("LDSHIM_PROBE_DIR");
    if (env && *env) return env;
    std::string loaded;
    std::vector<std::string> dirs = library_dirs(&loaded);
    for (const auto& d : dirs) {
        std::string candidate = d + std::string(kProbeSubdir);
        if (access((candidate + std::string(kHelper)).c_str(), F_OK) == 0) return candidate;
    }
    if (dirs.empty()) {
        *missing = "the path libldshim was loaded under is unknown";
        return {};
    }
    std::string where;
    for (const auto& d : dirs) where += (where.empty() ? "" : ", ") + d + std::string(kProbeSubdir);
    *missing = "no " + std::string(kProbeSubdir.substr(1)) + std::string(kHelper) + " beside " + loaded +
               (dirs.size() > 1 ? " or the files it links to" : "") + " (looked in " + where +
               "); keep LIBDIR/ldshim/probe beside libldshim.so.0: link the whole install, or link "
               "libldshim.so.0 itself rather than copying it";
    return {};
}

struct Closer {
    void operator()(void* h) const { dlclose(h); }
};
using Handle = std::unique_ptr<void, Closer>;

using SearchFn = int (*)(dlopen_fn, const char*, char*, std::size_t);

// Where glibc found `name` asked for by the helper, relative to the probe
// directory ("" for the directory itself), or nullopt.
std::optional<std::string> found_in(SearchFn search, dlopen_fn open, const std::string& dir, const char* name) {
    char path[4096];
    if (search(open, name, path, sizeof path) != 0) return std::nullopt;
    std::string_view p = path;
    if (!p.starts_with(dir + "/")) return std::nullopt;
    p.remove_prefix(dir.size() + 1);
    if (p == name) return std::string();
    if (!p.ends_with(std::string("/") + name)) return std::nullopt;
    p.remove_suffix(std::strlen(name) + 1);
    return std::string(p);
}

std::optional<std::uint32_t> levels_of(const std::string& subdir) {
    if (subdir.empty()) return 1u;
    constexpr std::string_view kHwcaps = "glibc-hwcaps/";
    std::string_view s(subdir);
    std::uint32_t bit = s.starts_with(kHwcaps) ? loader::isa_level_bit(s.substr(kHwcaps.size())) : 0;
    if (bit == 0) return std::nullopt;
    return bit | (bit - 1);  // the levels are cumulative
}

}  // namespace

std::optional<std::vector<std::string>> read_serinfo(void* map) {
    Dl_serinfo size{};
    if (dlinfo(map, RTLD_DI_SERINFOSIZE, &size) != 0 || size.dls_size < sizeof(Dl_serinfo)) return std::nullopt;
    auto buf = std::make_unique<std::max_align_t[]>(size.dls_size / sizeof(std::max_align_t) + 1);
    auto* si = reinterpret_cast<Dl_serinfo*>(buf.get());
    si->dls_size = size.dls_size;
    si->dls_cnt = size.dls_cnt;
    if (dlinfo(map, RTLD_DI_SERINFO, si) != 0) return std::nullopt;
    std::vector<std::string> out;
    const Dl_serpath* paths = &si->dls_serpath[0];
    for (unsigned i = 0; i < si->dls_cnt; ++i) out.emplace_back(paths[i].dls_name);
    return out;
}

std::optional<SelfProbe> probe_own_loader(std::string* why) {
    auto fail = [&](std::string reason) -> std::optional<SelfProbe> {
        if (why) *why = std::move(reason);
        return std::nullopt;
    };
    dlopen_fn open = libc_dlopen_function();
    if (!open) return fail("glibc's dlopen cannot be found");
    std::string missing;
    const std::string dir = probe_dir(&missing);
    if (dir.empty()) return fail("the loader probe cannot be found: " + missing);
    const std::string helper_path = dir + std::string(kHelper);
    Handle helper(open(helper_path.c_str(), RTLD_NOW | RTLD_LOCAL));
    if (!helper) {
        dlerror_fn last_error = libc_dlerror_function();
        const char* e = last_error ? last_error() : nullptr;
        return fail("the loader probe cannot be opened (" + std::string(e ? e : helper_path) +
                    "; LDSHIM_PROBE_DIR names it for a static build)");
    }
    auto search = reinterpret_cast<SearchFn>(dlsym(helper.get(), "ldshim_probe_search"));
    auto serinfo = read_serinfo(helper.get());
    if (!search || !serinfo) return fail("the loader probe at " + helper_path + " does not answer");
    SelfProbe p;
    bool lib_seen = false;
    for (const auto& d : *serinfo) {
        if (d.starts_with(kPlatformMarker)) p.platform = d.substr(kPlatformMarker.size());
        if (d.starts_with(kLibMarker)) {
            p.dst_lib = d.substr(kLibMarker.size());
            lib_seen = true;
        }
    }
    if (!lib_seen) return fail("the loader did not expand the probe's $LIB marker");
    auto hw = found_in(search, open, dir, "libldshim-probe-hwcaps.so");
    auto levels = hw ? levels_of(*hw) : std::nullopt;
    if (!levels) return fail("the loader probe's glibc-hwcaps target was not found in " + dir);
    p.isa_levels = *levels;
    auto legacy = found_in(search, open, dir, "libldshim-probe-legacy.so");
    if (!legacy || (!legacy->empty() && *legacy != "tls"))
        return fail("the loader probe's legacy target was not found in " + dir);
    p.legacy_subdirs = *legacy == "tls";
    return p;
}

}  // namespace ldshim::host
