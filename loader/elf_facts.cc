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

// The program header table, checked against its header fields and the file.
template <typename E>
const char* read_program_headers(const FileImage& img, const typename E::Ehdr& eh, std::vector<typename E::Phdr>& ph) {
    if (eh.e_phentsize != sizeof(typename E::Phdr)) return "corrupt program header table";
    if (eh.e_phnum > kMaxPhnum) return "corrupt program header table";
    ph.resize(eh.e_phnum);
    if (!img.read_at(eh.e_phoff, ph.size() * sizeof(typename E::Phdr), reinterpret_cast<std::byte*>(ph.data())))
        return "program header table extends past the end of the file";
    return nullptr;
}

// The first PT_INTERP's path into f.interp.
template <typename Phdr>
const char* read_interp(const FileImage& img, const std::vector<Phdr>& ph, ObjectFacts& f) {
    for (const auto& p : ph) {
        if (p.p_type != PT_INTERP) continue;
        if (p.p_filesz == 0 || p.p_filesz > 4096) return "PT_INTERP lies outside the file";
        std::string s(p.p_filesz, '\0');
        if (!img.read_at(p.p_offset, s.size(), reinterpret_cast<std::byte*>(s.data())))
            return "PT_INTERP lies outside the file";
        f.interp = std::string(s.c_str());
        break;
    }
    return nullptr;
}

template <typename Phdr>
const Phdr* find_dynamic(const std::vector<Phdr>& ph) {
    for (const auto& p : ph)
        if (p.p_type == PT_DYNAMIC) return &p;
    return nullptr;
}

// The dynamic section, decoded once into string offsets (up to DT_NULL).
template <typename E>
const char* read_dynamic(const FileImage& img, const typename E::Phdr& dynamic, DynamicEntries& de) {
    std::uint64_t ndyn = dynamic.p_filesz / sizeof(typename E::Dyn);
    if (ndyn == 0 || dynamic.p_filesz > kMaxDynamic) return "dynamic section lies outside the file";
    std::vector<typename E::Dyn> dyn(ndyn);
    if (!img.read_at(dynamic.p_offset, ndyn * sizeof(typename E::Dyn), reinterpret_cast<std::byte*>(dyn.data())))
        return "dynamic section lies outside the file";
    for (const auto& d : dyn)
        if (!de.add(d.d_tag, d.d_un.d_val)) break;
    return nullptr;
}

// DT_STRTAB is an address: map it through the file-backed PT_LOADs.
template <typename Phdr>
std::optional<std::uint64_t> file_offset_of(const std::vector<Phdr>& ph, std::uint64_t vaddr) {
    for (const auto& p : ph)
        if (p.p_type == PT_LOAD && vaddr >= p.p_vaddr && vaddr - p.p_vaddr < p.p_filesz)
            return p.p_offset + (vaddr - p.p_vaddr);
    return std::nullopt;
}

// The part of the string table that the strings we need live in: [lo, hi]
// spans their offsets, `tab` holds [lo, end).  A string that runs past the
// window reads on to the table's end.
struct StringWindow {
    const FileImage& img;
    std::uint64_t table_off;  // DT_STRTAB's file offset
    std::uint64_t strsz;      // DT_STRSZ
    std::uint64_t lo = std::numeric_limits<std::uint64_t>::max(), hi = 0;
    std::uint64_t end = 0;
    std::string tab;

    void cover(std::uint64_t off) {
        lo = std::min(lo, off);
        hi = std::max(hi, off);
    }

    bool load(std::uint64_t to) {
        end = to;
        // A table that claims to run past the end of the file is cut there.
        std::uint64_t start = table_off + lo;
        std::uint64_t avail = img.size() > start ? img.size() - start : 0;
        std::uint64_t len = std::min(end - lo, avail);
        if (len > kMaxStrtab) return false;
        tab.assign(len, '\0');
        return img.read_at(start, len, reinterpret_cast<std::byte*>(tab.data()));
    }

    std::optional<std::string> get(std::uint64_t off) {
        std::uint64_t rel = off - lo;
        for (;;) {
            const void* nul = rel < tab.size() ? std::memchr(tab.data() + rel, '\0', tab.size() - rel) : nullptr;
            if (nul) return std::string(static_cast<const char*>(tab.data()) + rel, static_cast<const char*>(nul));
            if (end >= strsz || !load(strsz)) return std::nullopt;
        }
    }
};

// The strings of `de` (DT_NEEDED, DT_SONAME, DT_RPATH, DT_RUNPATH) into
// r.facts, from the string table at file offset `table_off`; false with
// r.error when they cannot be read.
bool read_strings(const FileImage& img, std::uint64_t table_off, const DynamicEntries& de, FactsResult& r) {
    StringWindow w{img, table_off, *de.strsz};
    for (auto o : de.needed) w.cover(o);
    for (auto o : {de.soname, de.rpath, de.runpath})
        if (o) w.cover(*o);
    if (w.hi >= w.strsz) {
        r.error = "string offset is out of range";
        return false;
    }
    if (!w.load(std::min<std::uint64_t>(w.strsz, w.hi + 4096))) {
        r.error = "string table lies outside the file";
        return false;
    }
    return de.resolve(r.facts, r.error, [&](std::uint64_t off) { return w.get(off); });
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
    std::vector<typename E::Phdr> ph;
    if (const char* why = read_program_headers<E>(img, eh, ph)) return fail(why);
    if (const char* why = read_interp(img, ph, f)) return fail(why);
    const typename E::Phdr* dynamic = find_dynamic(ph);
    if (!dynamic) {
        r.ok = true;  // a static object: no dependencies to follow
        return r;
    }
    f.has_dynamic = true;
    DynamicEntries de;
    if (const char* why = read_dynamic<E>(img, *dynamic, de)) return fail(why);
    if (!de.strings_to_read(r)) return r;
    std::optional<std::uint64_t> strtab_off = file_offset_of(ph, *de.strtab);
    if (!strtab_off) return fail("DT_STRTAB points outside every loadable segment");
    if (!read_strings(img, *strtab_off, de, r)) return r;
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
