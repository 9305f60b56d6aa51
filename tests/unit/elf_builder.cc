#include "elf_builder.h"

#include <elf.h>

#include <cstring>

namespace ldshim::testing {

std::vector<std::byte> build_elf(const ElfSpec& spec) {
    // Layout: ehdr | phdrs (LOAD, DYNAMIC, [INTERP]) | strtab | dynamic.
    std::string strtab(1, '\0');
    auto add = [&](const std::string& s) {
        auto off = strtab.size();
        strtab += s;
        strtab += '\0';
        return static_cast<std::uint64_t>(off);
    };
    std::vector<Elf64_Dyn> dyn;
    for (const auto& n : spec.needed) dyn.push_back({DT_NEEDED, {add(n)}});
    if (spec.soname) dyn.push_back({DT_SONAME, {add(*spec.soname)}});
    if (spec.rpath) dyn.push_back({DT_RPATH, {add(*spec.rpath)}});
    if (spec.runpath) dyn.push_back({DT_RUNPATH, {add(*spec.runpath)}});
    if (spec.flags_1) dyn.push_back({DT_FLAGS_1, {spec.flags_1}});
    std::uint64_t interp_off = spec.interp ? add(*spec.interp) : 0;

    const std::size_t nph = spec.dynamic ? (spec.interp ? 3 : 2) : 1;
    const std::uint64_t strtab_off = sizeof(Elf64_Ehdr) + nph * sizeof(Elf64_Phdr);
    std::uint64_t dyn_off = (strtab_off + strtab.size() + 7) & ~std::uint64_t{7};
    dyn.push_back({DT_STRTAB, {strtab_off}});  // vaddr == offset: one segment at 0
    dyn.push_back({DT_STRSZ, {strtab.size()}});
    dyn.push_back({DT_NULL, {0}});
    std::uint64_t total = dyn_off + dyn.size() * sizeof(Elf64_Dyn);

    std::vector<std::byte> out(total);
    Elf64_Ehdr eh{};
    std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
    eh.e_ident[EI_CLASS] = spec.elf_class;
    eh.e_ident[EI_DATA] = ELFDATA2LSB;
    eh.e_ident[EI_VERSION] = EV_CURRENT;
    eh.e_type = spec.type;
    eh.e_machine = spec.machine;
    eh.e_version = EV_CURRENT;
    eh.e_phoff = sizeof(Elf64_Ehdr);
    eh.e_ehsize = sizeof(Elf64_Ehdr);
    eh.e_phentsize = sizeof(Elf64_Phdr);
    eh.e_phnum = static_cast<std::uint16_t>(nph);
    std::memcpy(out.data(), &eh, sizeof eh);

    std::vector<Elf64_Phdr> ph;
    ph.push_back({PT_LOAD, PF_R, 0, 0, 0, total, total, 0x1000});
    if (spec.dynamic) {
        ph.push_back({PT_DYNAMIC, PF_R, dyn_off, dyn_off, dyn_off, dyn.size() * sizeof(Elf64_Dyn),
                      dyn.size() * sizeof(Elf64_Dyn), 8});
        if (spec.interp)
            ph.push_back({PT_INTERP, PF_R, strtab_off + interp_off, strtab_off + interp_off, strtab_off + interp_off,
                          spec.interp->size() + 1, spec.interp->size() + 1, 1});
    }
    std::memcpy(out.data() + sizeof eh, ph.data(), ph.size() * sizeof(Elf64_Phdr));
    std::memcpy(out.data() + strtab_off, strtab.data(), strtab.size());
    if (spec.dynamic) std::memcpy(out.data() + dyn_off, dyn.data(), dyn.size() * sizeof(Elf64_Dyn));
    return out;
}

std::string as_string(const std::vector<std::byte>& b) {
    return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

}  // namespace ldshim::testing
