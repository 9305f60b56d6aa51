#include "loader/elf_facts.h"

#include "loader/elf_dynamic.h"
#include "loader/fs.h"

#include <elf.h>

#include <cstring>
#include <limits>

namespace ldshim::loader {
namespace {

struct Elf32Types {
    using Ehdr = Elf32_Ehdr;
    using Phdr = Elf32_Phdr;
    using Dyn = Elf32_Dyn;
};
struct Elf64Types {
    using Ehdr = Elf64_Ehdr;
    using Phdr = Elf64_Phdr;
    using Dyn = Elf64_Dyn;
};

// Caps that keep hostile headers from turning into huge allocations.
constexpr std::uint64_t kMaxPhnum = 0xffff;
constexpr std::uint64_t kMaxDynamic = 1u << 24;
constexpr std::uint64_t kMaxStrtab = 1u << 28;

template <typename T>
bool read_struct(const FileImage& img, std::uint64_t off, T* out) {
    return img.read_at(off, sizeof(T), reinterpret_cast<std::byte*>(out));
}

template <typename E>
FactsResult decode(const FileImage& img) {
    FactsResult r;
    auto fail = [&](const char* why) {
        r.ok = false;
        r.error = why;
        return r;
    };
    typename E::Ehdr eh;
    if (!read_struct(img, 0, &eh)) return fail("truncated or corrupt ELF header");
    auto& f = r.facts;
    f.elf_class = eh.e_ident[EI_CLASS];
    f.osabi = eh.e_ident[EI_OSABI];
    f.machine = eh.e_machine;
    f.type = eh.e_type;

    // Program headers: one read (normally already inside the first 832 bytes).
    if (eh.e_phnum == 0) {
        r.ok = true;
        return r;
    }
    if (eh.e_phentsize != sizeof(typename E::Phdr)) return fail("corrupt program header table");
    if (eh.e_phnum > kMaxPhnum) return fail("corrupt program header table");
    std::vector<typename E::Phdr> ph(eh.e_phnum);
    if (!img.read_at(eh.e_phoff, ph.size() * sizeof(typename E::Phdr), reinterpret_cast<std::byte*>(ph.data())))
        return fail("program header table extends past the end of the file");

    const typename E::Phdr* dynamic = nullptr;
    for (const auto& p : ph) {
        if (p.p_type == PT_DYNAMIC && !dynamic) dynamic = &p;
        if (p.p_type == PT_INTERP && !f.interp) {
            if (p.p_filesz == 0 || p.p_filesz > 4096) return fail("PT_INTERP lies outside the file");
            std::string s(p.p_filesz, '\0');
            if (!img.read_at(p.p_offset, s.size(), reinterpret_cast<std::byte*>(s.data())))
                return fail("PT_INTERP lies outside the file");
            f.interp = std::string(s.c_str());
        }
    }
    if (!dynamic) {
        r.ok = true;  // a static object: no dependencies to follow
        return r;
    }
    f.has_dynamic = true;
    std::uint64_t ndyn = dynamic->p_filesz / sizeof(typename E::Dyn);
    if (ndyn == 0 || dynamic->p_filesz > kMaxDynamic) return fail("dynamic section lies outside the file");
    std::vector<typename E::Dyn> dyn(ndyn);
    if (!img.read_at(dynamic->p_offset, ndyn * sizeof(typename E::Dyn), reinterpret_cast<std::byte*>(dyn.data())))
        return fail("dynamic section lies outside the file");

    // Decode once into offsets; strings come after DT_STRTAB is known.
    DynamicEntries de;
    for (const auto& d : dyn)
        if (!de.add(d.d_tag, d.d_un.d_val)) break;
    if (!de.strings_to_read(r)) return r;
    auto& strtab_vaddr = de.strtab;
    auto& strsz = de.strsz;
    // DT_STRTAB is an address: map it through the file-backed PT_LOADs.
    std::optional<std::uint64_t> strtab_off;
    for (const auto& p : ph)
        if (p.p_type == PT_LOAD && *strtab_vaddr >= p.p_vaddr && *strtab_vaddr - p.p_vaddr < p.p_filesz) {
            strtab_off = p.p_offset + (*strtab_vaddr - p.p_vaddr);
            break;
        }
    if (!strtab_off) return fail("DT_STRTAB points outside every loadable segment");

    // Read only the part of the table that the strings we need live in; if the
    // last string runs past that window, read on to the table's end.
    std::uint64_t lo = std::numeric_limits<std::uint64_t>::max(), hi = 0;
    auto span_of = [&](std::uint64_t off) {
        lo = std::min(lo, off);
        hi = std::max(hi, off);
    };
    for (auto o : de.needed) span_of(o);
    for (auto o : {de.soname, de.rpath, de.runpath})
        if (o) span_of(*o);
    if (hi >= *strsz) return fail("string offset is out of range");
    std::string tab;
    auto load = [&](std::uint64_t end) {
        // A table that claims to run past the end of the file is cut there.
        std::uint64_t start = *strtab_off + lo;
        std::uint64_t avail = img.size() > start ? img.size() - start : 0;
        std::uint64_t len = std::min(end - lo, avail);
        if (len > kMaxStrtab) return false;
        tab.assign(len, '\0');
        return img.read_at(start, len, reinterpret_cast<std::byte*>(tab.data()));
    };
    std::uint64_t end = std::min<std::uint64_t>(*strsz, hi + 4096);
    if (!load(end)) return fail("string table lies outside the file");
    auto get = [&](std::uint64_t off) -> std::optional<std::string> {
        std::uint64_t rel = off - lo;
        for (;;) {
            const void* nul = rel < tab.size() ? std::memchr(tab.data() + rel, '\0', tab.size() - rel) : nullptr;
            if (nul) return std::string(static_cast<const char*>(tab.data()) + rel, static_cast<const char*>(nul));
            if (end >= *strsz || !load(end = *strsz)) return std::nullopt;
        }
    };
    if (!de.resolve(f, r.error, get)) return r;
    r.ok = true;
    return r;
}

}  // namespace

FactsResult read_facts(const FileImage& image) {
    auto head = image.head();
    if (head.size() < EI_NIDENT || std::memcmp(head.data(), ELFMAG, SELFMAG) != 0)
        return {false, {}, "not an ELF file"};
    const auto* id = reinterpret_cast<const unsigned char*>(head.data());
    if (id[EI_DATA] != ELFDATA2LSB) {
        FactsResult r{false, {}, "big-endian ELF files are not supported"};
        r.facts.elf_class = id[EI_CLASS];
        return r;
    }
    if (id[EI_CLASS] == ELFCLASS64) return decode<Elf64Types>(image);
    if (id[EI_CLASS] == ELFCLASS32) return decode<Elf32Types>(image);
    return {false, {}, "unknown ELF class"};
}

FactsResult read_facts(std::span<const std::byte> image) {
    MemoryImage m(std::string(reinterpret_cast<const char*>(image.data()), image.size()), {}, 0);
    return read_facts(m);
}

}  // namespace ldshim::loader
