#include "loader/elf_dynamic.h"
#include "loader/elf_facts.h"
#include "loader/loaded_extent.h"

#include <elf.h>
#include <link.h>

#include <cstring>

namespace ldshim::loader {
FactsResult read_loaded_facts(std::uintptr_t base, const void* phdr_v, std::size_t phnum) {
    FactsResult r;
    const auto* ph = static_cast<const ElfW(Phdr)*>(phdr_v);
    if (!ph || phnum == 0) {
        r.error = "no program headers";
        return r;
    }
    LoadedExtent ext{ph, phnum, base};
    auto& f = r.facts;
    f.elf_class = sizeof(void*) == 8 ? ELFCLASS64 : ELFCLASS32;
#if defined(__x86_64__)
    f.machine = EM_X86_64;
#elif defined(__aarch64__)
    f.machine = EM_AARCH64;
#endif
    f.type = ET_DYN;
    const ElfW(Phdr)* dynamic = nullptr;
    for (std::size_t i = 0; i < phnum; ++i) {
        if (ph[i].p_type == PT_DYNAMIC && !dynamic) dynamic = &ph[i];
        if (ph[i].p_type == PT_INTERP && !f.interp) {
            std::uintptr_t a = base + ph[i].p_vaddr;
            if (ph[i].p_memsz && ext.contains(a, ph[i].p_memsz))
                f.interp = std::string(reinterpret_cast<const char*>(a), strnlen(reinterpret_cast<const char*>(a), ph[i].p_memsz));
        }
    }
    if (!dynamic) {
        r.ok = true;
        return r;
    }
    f.has_dynamic = true;
    std::uintptr_t dyn_addr = base + dynamic->p_vaddr;
    std::size_t ndyn = dynamic->p_memsz / sizeof(ElfW(Dyn));
    if (!ext.contains(dyn_addr, ndyn * sizeof(ElfW(Dyn)))) {
        r.error = "dynamic section lies outside the object's segments";
        return r;
    }
    const auto* dyn = reinterpret_cast<const ElfW(Dyn)*>(dyn_addr);
    DynamicEntries de;
    for (std::size_t i = 0; i < ndyn; ++i)
        if (!de.add(dyn[i].d_tag, dyn[i].d_un.d_val)) break;
    f.flags_1 = de.flags_1;
    if (!de.has_strings()) {
        r.ok = true;
        return r;
    }
    if (const char* why = de.strtab_problem()) {
        r.error = why;
        return r;
    }
    auto& strtab = de.strtab;
    auto& strsz = de.strsz;
    std::uintptr_t tab = ext.pointer(*strtab, *strsz);
    if (!tab) {
        r.error = "string table lies outside the object's segments";
        return r;
    }
    const char* s = reinterpret_cast<const char*>(tab);
    auto get = [&](std::uint64_t off) -> std::optional<std::string> {
        const void* nul = off < *strsz ? std::memchr(s + off, '\0', *strsz - off) : nullptr;
        if (!nul) return std::nullopt;
        return std::string(s + off, static_cast<const char*>(nul));
    };
    if (!de.resolve(f, r.error, get)) return r;
    r.ok = true;
    return r;
}

}  // namespace ldshim::loader
