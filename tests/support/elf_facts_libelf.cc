#include "tests/support/elf_facts_libelf.h"
#include "loader/elf_dynamic.h"

#include <gelf.h>
#include <libelf.h>

#include <cstring>
#include <memory>

namespace ldshim::loader {
namespace {

struct ElfCloser {
    void operator()(Elf* e) const { elf_end(e); }
};
using ElfPtr = std::unique_ptr<Elf, ElfCloser>;

bool init_libelf() {
    static const bool ok = elf_version(EV_CURRENT) != EV_NONE;
    return ok;
}

// Translate a virtual address to a file offset through the PT_LOAD segments,
// as the loader's own mapping would place it.  Only the file-backed part of a
// segment counts.
std::optional<std::uint64_t> vaddr_to_offset(const std::vector<GElf_Phdr>& loads, std::uint64_t vaddr) {
    for (const auto& ph : loads)
        if (vaddr >= ph.p_vaddr && vaddr - ph.p_vaddr < ph.p_filesz) return ph.p_offset + (vaddr - ph.p_vaddr);
    return std::nullopt;
}

// A raw range of the file; libelf refuses ranges outside it.
const char* raw(Elf* elf, std::uint64_t off, std::uint64_t size) {
    if (size == 0 || off > static_cast<std::uint64_t>(INT64_MAX)) return nullptr;
    Elf_Data* d = elf_getdata_rawchunk(elf, static_cast<int64_t>(off), size, ELF_T_BYTE);
    return d ? static_cast<const char*>(d->d_buf) : nullptr;
}

FactsResult decode(Elf* elf) {
    FactsResult r;
    if (!elf || elf_kind(elf) != ELF_K_ELF) {
        r.error = "not an ELF file";
        return r;
    }
    GElf_Ehdr eh;
    if (!gelf_getehdr(elf, &eh)) {
        r.error = "truncated or corrupt ELF header";
        return r;
    }
    auto& f = r.facts;
    f.elf_class = eh.e_ident[EI_CLASS];
    f.osabi = eh.e_ident[EI_OSABI];
    f.machine = eh.e_machine;
    f.type = eh.e_type;

    std::size_t phnum = 0;
    if (elf_getphdrnum(elf, &phnum) != 0) {
        r.error = "corrupt program header table";
        return r;
    }
    std::vector<GElf_Phdr> loads;
    std::optional<GElf_Phdr> dynamic;
    for (std::size_t i = 0; i < phnum; ++i) {
        GElf_Phdr ph;
        if (!gelf_getphdr(elf, static_cast<int>(i), &ph)) {
            r.error = "program header table extends past the end of the file";
            return r;
        }
        if (ph.p_type == PT_LOAD) loads.push_back(ph);
        if (ph.p_type == PT_DYNAMIC && !dynamic) dynamic = ph;
        if (ph.p_type == PT_INTERP && !f.interp) {
            const char* s = raw(elf, ph.p_offset, ph.p_filesz);
            if (!s) {
                r.error = "PT_INTERP lies outside the file";
                return r;
            }
            f.interp = std::string(s, strnlen(s, ph.p_filesz));
        }
    }
    if (!dynamic) {
        r.ok = true;  // a static object: no dependencies to follow
        return r;
    }
    f.has_dynamic = true;
    Elf_Data* data = dynamic->p_filesz == 0 ? nullptr
                                            : elf_getdata_rawchunk(elf, static_cast<int64_t>(dynamic->p_offset),
                                                                   dynamic->p_filesz, ELF_T_DYN);
    if (!data) {
        r.error = "dynamic section lies outside the file";
        return r;
    }
    std::size_t entsize = gelf_fsize(elf, ELF_T_DYN, 1, EV_CURRENT);
    std::size_t ndyn = entsize ? data->d_size / entsize : 0;

    // Decode once: string offsets first, strings after DT_STRTAB is known.
    DynamicEntries de;
    for (std::size_t i = 0; i < ndyn; ++i) {
        GElf_Dyn d;
        if (!gelf_getdyn(data, static_cast<int>(i), &d) || !de.add(d.d_tag, d.d_un.d_val)) break;
    }
    if (!de.strings_to_read(r)) return r;
    auto& strtab_vaddr = de.strtab;
    auto& strsz = de.strsz;
    auto strtab_off = vaddr_to_offset(loads, *strtab_vaddr);
    if (!strtab_off) {
        r.error = "DT_STRTAB points outside every loadable segment";
        return r;
    }
    const char* strtab = raw(elf, *strtab_off, *strsz);
    if (!strtab) {
        r.error = "string table lies outside the file";
        return r;
    }
    // A NUL-terminated string inside the table.
    auto get = [&](std::uint64_t off) -> std::optional<std::string> {
        const void* nul = off < *strsz ? std::memchr(strtab + off, '\0', *strsz - off) : nullptr;
        if (!nul) return std::nullopt;
        return std::string(strtab + off, static_cast<const char*>(nul));
    };
    if (!de.resolve(f, r.error, get)) return r;
    r.ok = true;
    return r;
}

}  // namespace

FactsResult read_facts_libelf(std::span<const std::byte> image) {
    if (!init_libelf()) return {false, {}, "libelf initialisation failed"};
    if (image.size() < EI_NIDENT || std::memcmp(image.data(), ELFMAG, SELFMAG) != 0)
        return {false, {}, "not an ELF file"};
    // libelf only reads through this pointer.
    ElfPtr elf(elf_memory(const_cast<char*>(reinterpret_cast<const char*>(image.data())), image.size()));
    return decode(elf.get());
}

}  // namespace ldshim::loader
