// derive_in_process(): the loader configuration of this very process, read in
// place.  Nothing is spawned and nothing is written: the runtime runs inside
// other people's processes.  What varies between loaders is learnt from the
// loader, on glibc 2.28 to 2.43 alike:
//  * system directories: RTLD_DI_SERINFO of ld.so's own link map, whose tail
//    they are (no loader lists hwcaps subdirectories there);
//  * glibc-hwcaps levels, legacy subdirectories, $PLATFORM, $LIB: the probe
//    (host/self_probe.cc), which asks the loader to search for ldshim's own
//    probe files;
//  * the machine (ELF class and e_machine) the loader accepts: its own ELF
//    header, mapped at AT_BASE;
//  * legacy hwcap bits: getauxval(AT_HWCAP), which glibc answers with its
//    own dl_hwcap (x86-64's synthetic bits; on aarch64 the kernel's, e.g.
//    HWCAP_ATOMICS), under glibc.cpu.hwcap_mask / LD_HWCAP_MASK from the
//    environment ld.so started with (host/startup_env.h), whose default is
//    that machine's;
//  * what only the version tells (bug fixes, the 2.43 debug lines):
//    glibc_release(), checked against the probe where both speak.
#include "host/loader_in_process.h"

#include "host/loaded_objects.h"
#include "host/self_probe.h"
#include "loader/elf_facts.h"
#include "machine/machine.h"

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

// Whether this process's loader refuses position-independent executables:
// its mapped, readable segments hold the message it refuses them with (read
// in memory, no file opened).
bool own_loader_refuses_pie(std::uintptr_t base) {
    const auto* eh = reinterpret_cast<const ElfW(Ehdr)*>(base);
    const auto* ph = reinterpret_cast<const ElfW(Phdr)*>(base + eh->e_phoff);
    for (std::size_t i = 0; i < eh->e_phnum; ++i) {
        if (ph[i].p_type != PT_LOAD || !(ph[i].p_flags & PF_R)) continue;
        std::string_view bytes(reinterpret_cast<const char*>(base + ph[i].p_vaddr), ph[i].p_filesz);
        if (loader_refuses_pie(bytes)) return true;
    }
    return false;
}

// The class and machine of the objects this process's loader accepts, from
// its own ELF header in memory (the start of its first PT_LOAD, mapped at
// AT_BASE): what glibc's open_verify compares against, whatever the CPU.
bool read_own_loader_machine(std::uintptr_t base, LoaderConfig& cfg) {
    std::string_view head(reinterpret_cast<const char*>(base), sizeof(ElfW(Ehdr)));
    if (!read_loader_machine(head, cfg)) return false;
    return machine::modelled(cfg.machine);
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

}  // namespace

std::optional<std::string> main_program_origin(const StartupEnvironment& env, bool secure) {
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf);
    std::optional<std::string> exe;
    if (n > 0) exe = std::string(buf, static_cast<std::size_t>(n));
    return loader::main_program_origin(exe, env.vars.origin_path, secure);
}

std::optional<LoaderConfig> derive_in_process(const StartupEnvironment& env, std::string* error) {
    auto fail = [&](std::string why) -> std::optional<LoaderConfig> {
        if (error) *error = std::move(why);
        return std::nullopt;
    };
    std::string_view version = gnu_get_libc_version();
    std::optional<GlibcRelease> release = glibc_release(version);
    if (!release) return fail("glibc " + std::string(version) + ": ldshim is checked against glibc 2.28 to 2.43 only");
    link_map* rtld = rtld_link_map();
    if (!rtld)
        return fail(
            "no interpreter mapped (AT_BASE): started as `ld.so PROGRAM`, whose options are not "
            "visible in process, or not dynamically linked");
    auto serinfo = read_serinfo(rtld);
    if (!serinfo) return fail("dlinfo(RTLD_DI_SERINFO) failed on the loader's link map");
    auto facts = main_program_facts();
    if (!facts) return fail("cannot read the main program's dynamic section");
    std::string why;
    std::optional<SelfProbe> probe = probe_own_loader(&why);
    if (!probe) return fail(why);
    if (probe->legacy_subdirs != release->legacy_subdirs)
        return fail("glibc " + std::string(version) + (probe->legacy_subdirs ? " searches" : " does not search") +
                    " legacy hwcap subdirectories, against every release of that version");
    LoaderConfig target;  // only its class and machine are read
    if (!read_own_loader_machine(getauxval(AT_BASE), target))
        return fail("this process's loader is for a machine ldshim does not model");
    const bool secure = getauxval(AT_SECURE) != 0;
    SerinfoPrefix p;
    p.main_rpath = facts->effective_rpath();
    p.library_path = env.vars.library_path;
    p.origin = main_program_origin(env, secure);
    p.platform = probe->platform;
    p.secure = secure;
    auto dirs = system_dirs_from_serinfo(*serinfo, p, &why);
    if (!dirs) return fail(why);
    // The legacy hwcap bits the loader matches subdirectories and cache
    // entries against; from 2.40 it skips every such entry, as no bit does.
    // A searched bit ldshim cannot name (a wider mask on aarch64) would be a
    // subdirectory the model lacks.
    std::uint64_t searched = release->legacy_cache_entries
                                 ? getauxval(AT_HWCAP) & hwcap_mask_from_env(env.envp().data(), secure, target.machine)
                                 : 0;
    if (probe->legacy_subdirs && (searched & ~named_hwcap_bits(target.machine)))
        return fail("this machine's legacy hwcap names are not modelled");
    LoaderConfig cfg = assemble_config(std::move(*dirs), probe->isa_levels, probe->platform, searched, target.machine);
    cfg.elf_class = target.elf_class;
    cfg.elf_data = target.elf_data;
    if (!probe->legacy_subdirs) cfg.subdirs = make_subdirs(cfg.hwcaps_active, {});
    cfg.dst_lib = probe->dst_lib;
    cfg.behaviour = release->behaviour;
    cfg.behaviour.refuses_pie = own_loader_refuses_pie(getauxval(AT_BASE));
    if (rtld->l_name && *rtld->l_name) cfg.rtld_path = rtld->l_name;
    return cfg;
}

}  // namespace ldshim::host
