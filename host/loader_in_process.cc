// derive_in_process(): the loader configuration of this very process, read in
// place.  Nothing is spawned and nothing is written: the runtime runs inside
// other people's processes.  Sources (glibc 2.31, 2.36 and 2.41, x86-64):
//  * system directories: RTLD_DI_SERINFO of ld.so's own link map, whose tail
//    they are (2.36 lists plain directories there: no hwcaps subdirectories,
//    every flag 0);
//  * ISA levels, $PLATFORM, legacy hwcap bits: the loader's own CPU feature
//    state (<sys/platform/x86.h>): CPUID and XCR0 after glibc's usability
//    rules and after GLIBC_TUNABLES=glibc.cpu.hwcaps, as ld.so settled them
//    at startup; before 2.33, CPUID and XCR0 with 2.31's usability rules
//    (host/cpu.cc; its glibc.cpu.hwcaps tunable is not modelled);
//  * glibc.cpu.hwcap_mask / LD_HWCAP_MASK: the environment.
#include "host/loader_in_process.h"

#include "host/cpu.h"
#include "host/loaded_objects.h"
#include "loader/elf_facts.h"

#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <link.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string_view>

extern char** environ;

namespace ldshim::host {

using namespace ldshim::loader;  // NOLINT(google-build-using-namespace)

namespace {

// ld.so's own link map: the object mapped at AT_BASE.  A link map is what a
// dlopen handle points to in glibc, so dlinfo accepts it.
link_map* rtld_link_map() {
    auto base = getauxval(AT_BASE);
    Dl_info info{};
    void* extra = nullptr;
    if (!base || !dladdr1(reinterpret_cast<void*>(base), &info, &extra, RTLD_DL_LINKMAP)) return nullptr;
    return static_cast<link_map*>(extra);
}

std::optional<std::vector<std::string>> read_serinfo(link_map* map) {
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

// The main program's dynamic section, in memory (the first object
// dl_iterate_phdr reports).  Read after the walk: nothing may allocate inside
// it, and the main program is never unloaded.
std::optional<ObjectFacts> main_program_facts() {
    struct Where {
        std::uintptr_t base = 0;
        const void* phdr = nullptr;
        std::size_t phnum = 0;
    } main;
    for_each_loaded([&](const dl_phdr_info& info, const LoadCounters&) {
        main = {info.dlpi_addr, info.dlpi_phdr, info.dlpi_phnum};
        return false;
    });
    auto r = read_loaded_facts(main.base, main.phdr, main.phnum);
    if (!r.ok) return std::nullopt;
    return std::move(r.facts);
}

// The main program's $ORIGIN as ld.so finds it: /proc/self/exe, else
// LD_ORIGIN_PATH (not for set-id processes) without trailing slashes.
std::optional<std::string> main_origin(bool secure) {
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf);
    if (n > 0 && buf[0] == '/') {
        std::string path(buf, static_cast<std::size_t>(n));
        auto slash = path.rfind('/');
        return slash == 0 ? std::string("/") : path.substr(0, slash);
    }
    const char* o = secure ? nullptr : std::getenv("LD_ORIGIN_PATH");
    if (!o) return std::nullopt;
    std::string s(o);
    while (s.size() > 1 && s.back() == '/') s.pop_back();
    return s;
}

// LD_LIBRARY_PATH as ld.so read it at startup: the last occurrence wins;
// set-id processes ignore it.
std::optional<std::string> startup_library_path(bool secure) {
    std::optional<std::string> out;
    if (secure) return out;
    for (char** e = environ; e && *e; ++e)
        if (std::string_view(*e).starts_with("LD_LIBRARY_PATH=")) out = std::string(*e + 16);
    return out;
}

// The versions whose rules are written here and tested against their own
// loader (the roots suite): 2.31 (Debian 11: no glibc-hwcaps, no
// <sys/platform/x86.h>), 2.36 (Debian 12) and 2.41 (Debian 13: no legacy
// hwcap subdirectories, "/" and non-directories handled as directories).
// Anything else declines rather than guesses.
struct VersionRules {
    std::string_view version;
    bool glibc_hwcaps, legacy_subdirs;
    LoaderBehaviour behaviour;
};
constexpr VersionRules kVersions[] = {
    {"2.31", false, true, {true, true}},
    {"2.36", true, true, {true, true}},
    {"2.41", true, false, {false, false}},
};

const VersionRules* rules_of(std::string_view version) {
    for (const auto& r : kVersions)
        if (r.version == version) return &r;
    return nullptr;
}

}  // namespace

std::optional<LoaderConfig> derive_in_process(std::string* error) {
    auto fail = [&](std::string why) -> std::optional<LoaderConfig> {
        if (error) *error = std::move(why);
        return std::nullopt;
    };
    std::string_view version = gnu_get_libc_version();
    const VersionRules* rules = rules_of(version);
    if (!rules)
        return fail("glibc " + std::string(version) +
                    ": the in-process derivation knows glibc 2.31, 2.36 and 2.41 only");
    link_map* rtld = rtld_link_map();
    if (!rtld)
        return fail(
            "no interpreter mapped (AT_BASE): started as `ld.so PROGRAM`, whose options are not "
            "visible in process, or not dynamically linked");
    auto serinfo = read_serinfo(rtld);
    if (!serinfo) return fail("dlinfo(RTLD_DI_SERINFO) failed on the loader's link map");
    auto facts = main_program_facts();
    if (!facts) return fail("cannot read the main program's dynamic section");
    const bool secure = getauxval(AT_SECURE) != 0;
    std::optional<CpuView> view = cpu_view();
    if (!view) return fail("the in-process derivation knows x86-64 only");
    CpuView cpu = *view;
    if (!rules->glibc_hwcaps) cpu.isa_levels = 1;
    SerinfoPrefix p;
    p.main_rpath = facts->effective_rpath();
    p.library_path = startup_library_path(secure);
    p.origin = main_origin(secure);
    p.platform = cpu.platform;
    p.secure = secure;
    std::string why;
    auto dirs = system_dirs_from_serinfo(*serinfo, p, &why);
    if (!dirs) return fail(why);
    std::uint64_t searched = cpu.hwcap & hwcap_mask_from_env(environ, secure);
    LoaderConfig cfg = assemble_config(std::move(*dirs), cpu.isa_levels, cpu.platform, searched);
    if (!rules->legacy_subdirs) cfg.subdirs = make_subdirs(cfg.hwcaps_active, {});
    cfg.behaviour = rules->behaviour;
    if (rtld->l_name && *rtld->l_name) cfg.rtld_path = rtld->l_name;
    return cfg;
}

}  // namespace ldshim::host
