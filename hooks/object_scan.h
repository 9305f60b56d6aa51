// Reads a loaded object's imports from its in-memory dynamic section: the
// relocations that store a symbol's address into a slot (machine/machine.h), with the
// symbol's name and the version the import asks for.  The dynamic section is
// decoded once per object; every pointer is checked against the object's
// PT_LOAD segments before it is followed.  Runs inside dl_iterate_phdr's
// callback, so it calls nothing that takes a loader lock.
#pragma once

#include "loader/loaded_extent.h"
#include "machine/machine.h"

#include <link.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ldshim::hooks {

struct Import {
    std::uintptr_t slot;  // address of the slot
    machine::SlotKind kind;
    const char* name;     // in the object's string table
    const char* version;  // the version the import names, or nullptr
    std::int64_t addend;
};

class ObjectImports {
public:
    // `info` as dl_iterate_phdr passes it.  Check ok() before using.
    explicit ObjectImports(const dl_phdr_info& info);

    bool ok() const { return error_ == nullptr; }
    const char* error() const { return error_; }  // static text
    bool has_ldshim_marker() const { return marker_; }
    // Is addr inside one of this object's PT_LOAD segments?
    bool contains(std::uintptr_t addr, std::size_t len = 1) const {
        if (nloads_ > kLoads) return extent_.contains(addr, len);
        for (std::size_t i = 0; i < nloads_; ++i)
            if (addr >= loads_[i].lo && addr <= loads_[i].hi && len <= loads_[i].hi - addr) return true;
        return false;
    }
    // A name and its GNU hash (loader::gnu_hash()).
    struct Name {
        const char* name;
        std::uint32_t hash;
    };
    // Whether the object may define (export) one of `names`, asked as the
    // loader's lookup asks its DT_GNU_HASH table: the Bloom filter, then the
    // hash chain and the name.  Yes where it has no such table, or one that
    // looks wrong.  (A template: the names' hashes fold into the code.)
    template <std::size_t N>
    bool may_define_any(const Name (&names)[N]) const {
        const GnuHashTable t = gnu_hash_table();
        if (t.verdict != GnuHashTable::ask) return t.verdict == GnuHashTable::maybe;
        for (const Name& n : names)
            if (t.bloom_admits(n.hash) && in_chain(n, t)) return true;
        return false;
    }
    // Is the word at addr in a writable segment and outside the range that
    // glibc makes read-only after relocation (PT_GNU_RELRO, whole pages)?
    bool plainly_writable(std::uintptr_t addr) const;

    // Calls fn(const Import&) for every slot relocation whose symbol name
    // passes want(const char*).  Malformed entries are skipped.  The name is
    // all a relocation costs until want() accepts it: a process's objects
    // hold thousands of relocations and hardly any names the hooks want, so
    // the slot's bounds and the version (a walk of DT_VERNEED) are worked
    // out only for a hit.
    template <class Want, class Fn>
    void for_each(Want&& want, Fn&& fn) const {
        // The usual tables (ELF's symbol size, a string table that ends with
        // a NUL) get a loop with two values fewer to keep in registers.
        if (names_.syment == sizeof(ElfW(Sym)) && names_.terminated)
            walk<true>(want, fn);
        else
            walk<false>(want, fn);
    }
    // The same relocations, each decoded in full (name and version) before
    // want() sees it: the reference that the tests hold for_each to.
    template <class Want, class Fn>
    void for_each_decoded(Want&& want, Fn&& fn) const {
        for (const Table& t : tables_)
            for (std::size_t i = 0; i < t.count; ++i) {
                Import imp;
                if (decode(t.rela[i], imp) && want(imp.name)) fn(static_cast<const Import&>(imp));
            }
    }

private:
    struct Table {
        const ElfW(Rela) * rela = nullptr;
        std::size_t count = 0;
    };
    // The symbol names of the relocations that store a symbol's address in a
    // slot: a relocation's type, its symbol's index and its name's offset
    // checked against the tables' bounds, nothing else.
    struct SymbolNames {
        const char* symtab = nullptr;
        std::size_t syment = sizeof(ElfW(Sym));
        std::size_t nsyms = 0;  // symbol entries between symtab and the end of its segment
        const char* strtab = nullptr;
        std::size_t strsz = 0;
        bool terminated = false;  // the string table ends with a NUL (checked once)

        // kUsual: syment is ELF's and the string table ends with a NUL.
        template <bool kUsual>
        const char* of(const ElfW(Rela) & r) const {
            if (machine::slot_kind(static_cast<std::uint32_t>(ELF64_R_TYPE(r.r_info))) == machine::SlotKind::none)
                return nullptr;
            auto sym = static_cast<std::uint64_t>(ELF64_R_SYM(r.r_info));
            if (sym == 0 || sym >= nsyms) return nullptr;
            const std::size_t size = kUsual ? sizeof(ElfW(Sym)) : syment;
            std::uint32_t off = reinterpret_cast<const ElfW(Sym)*>(symtab + sym * size)->st_name;
            if (off >= strsz) return nullptr;
            // A table that does not end with a NUL gets each name checked.
            if (!kUsual && !terminated && !std::memchr(strtab + off, 0, strsz - off)) return nullptr;
            return strtab + off;
        }
    };
    template <bool kUsual, class Want, class Fn>
    void walk(Want& want, Fn& fn) const {
        const SymbolNames names = names_;  // a local copy: kept in registers across the calls below
        for (const Table& t : tables_)
            for (const ElfW(Rela)* r = t.rela, *end = t.rela + t.count; r != end; ++r) {
                const char* name = names.template of<kUsual>(*r);
                Import imp;
                if (name && want(name) && complete(*r, name, imp)) fn(static_cast<const Import&>(imp));
            }
    }
    const ElfW(Phdr) * read_segments();
    Table table(std::uint64_t addr, std::uint64_t size, std::uint64_t skip) const;
    // The rest of an Import, for a relocation SymbolNames named.
    bool complete(const ElfW(Rela) & r, const char* name, Import& out) const;
    bool decode(const ElfW(Rela) & r, Import& out) const;
    const char* version_name(std::uint32_t sym) const;
    // The object's DT_GNU_HASH table, its bounds checked once.
    struct GnuHashTable {
        enum { ask, maybe, none } verdict = maybe;  // none: defines nothing
        const ElfW(Addr) * bloom = nullptr;
        std::uint32_t mask = 0, shift = 0;  // Bloom words - 1; the second hash's shift
        const std::uint32_t* buckets = nullptr;
        std::uint32_t nbuckets = 0, symoffset = 0;
        bool bloom_admits(std::uint32_t hash) const {
            constexpr std::uint32_t kBits = sizeof(ElfW(Addr)) * 8;
            const ElfW(Addr) word = bloom[(hash / kBits) & mask];
            return (word >> (hash % kBits)) & (word >> ((hash >> shift) % kBits)) & 1;
        }
    };
    GnuHashTable gnu_hash_table() const;
    // may_define_any's step after the Bloom filter: the bucket's chain.
    bool in_chain(const Name& n, const GnuHashTable& t) const;
    // Bytes from addr to the end of the PT_LOAD segment that holds it (0: none).
    std::size_t room_after(std::uintptr_t addr) const;
    // extent_.pointer's rule, through this object's contains().
    std::uintptr_t pointer(std::uint64_t value, std::size_t len) const {
        auto p = static_cast<std::uintptr_t>(value);
        if (contains(p, len)) return p;
        p += info_.dlpi_addr;
        return contains(p, len) ? p : 0;
    }

    const dl_phdr_info& info_;
    loader::LoadedExtent extent_;
    // The PT_LOAD ranges, copied once: every pointer is checked against them,
    // and walking the program headers for each check cost more than the
    // relocations of a small library.  More than kLoads: extent_ checks.
    struct Load {
        std::uintptr_t lo, hi;
    };
    static constexpr std::size_t kLoads = 8;
    Load loads_[kLoads];
    std::size_t nloads_ = 0;
    const char* error_ = nullptr;
    bool marker_ = false;
    const ElfW(Sym) * symtab_ = nullptr;
    std::size_t syment_ = sizeof(ElfW(Sym));
    const char* strtab_ = nullptr;
    std::size_t strsz_ = 0;
    SymbolNames names_;
    std::uint64_t versym_ = 0, verneed_ = 0;  // d_ptr values, followed only for a hit (version_name)
    std::uint64_t gnu_hash_ = 0;              // d_ptr, followed only by may_define
    std::size_t verneednum_ = 0;
    Table tables_[2];  // DT_RELA, DT_JMPREL
};

inline std::size_t ObjectImports::room_after(std::uintptr_t addr) const {
    if (nloads_ <= kLoads) {
        for (std::size_t i = 0; i < nloads_; ++i)
            if (addr >= loads_[i].lo && addr < loads_[i].hi) return loads_[i].hi - addr;
        return 0;
    }
    for (std::size_t i = 0; i < info_.dlpi_phnum; ++i) {
        const ElfW(Phdr)& ph = info_.dlpi_phdr[i];
        std::uintptr_t lo = info_.dlpi_addr + ph.p_vaddr, hi = lo + ph.p_memsz;
        if (ph.p_type == PT_LOAD && addr >= lo && addr < hi) return hi - addr;
    }
    return 0;
}

inline ObjectImports::GnuHashTable ObjectImports::gnu_hash_table() const {
    // The header (buckets, the first hashed symbol, Bloom words, shift),
    // the Bloom filter and the buckets, in one segment.
    constexpr std::size_t kHeader = 4 * sizeof(std::uint32_t);
    GnuHashTable t;
    std::uintptr_t header = gnu_hash_;
    std::size_t room = header ? room_after(header) : 0;
    if (header && room == 0) room = room_after(header += info_.dlpi_addr);  // a d_ptr not relocated in place
    if (room < kHeader) return t;
    const auto* h = reinterpret_cast<const std::uint32_t*>(header);
    const std::uint32_t nbuckets = h[0], words = h[2];
    if (nbuckets == 0) {
        t.verdict = GnuHashTable::none;
        return t;
    }
    if (words == 0 || (words & (words - 1)) != 0 || h[3] >= 32 ||
        room - kHeader < std::size_t{words} * sizeof(ElfW(Addr)) + std::size_t{nbuckets} * sizeof(std::uint32_t))
        return t;
    t.verdict = GnuHashTable::ask;
    t.bloom = reinterpret_cast<const ElfW(Addr)*>(h + 4);
    t.mask = words - 1;
    t.shift = h[3];
    t.buckets = reinterpret_cast<const std::uint32_t*>(t.bloom + words);
    t.nbuckets = nbuckets;
    t.symoffset = h[1];
    return t;
}

// Whether the object's relocations are done, so its slots hold real values.
// dl_iterate_phdr lists an object as soon as it is mapped (another thread
// may still be inside dlopen) and until it is unmapped; glibc registers it
// for _dl_find_object only once it is relocated, and withdraws it first on
// dlclose.  Lock-free, allocation-free: for use inside the walk.
bool relocated(const dl_phdr_info& info);

}  // namespace ldshim::hooks
