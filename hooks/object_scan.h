// Reads a loaded object's imports from its in-memory dynamic section: the
// relocations that store a symbol's address into a slot (arch.h), with the
// symbol's name and the version the import asks for.  The dynamic section is
// decoded once per object; every pointer is checked against the object's
// PT_LOAD segments before it is followed.  Runs inside dl_iterate_phdr's
// callback, so it calls nothing that takes a loader lock.
#pragma once

#include "hooks/arch.h"
#include "loader/loaded_extent.h"

#include <link.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ldshim::hooks {

struct Import {
    std::uintptr_t slot;  // address of the slot
    arch::SlotKind kind;
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
        const SymbolNames names = names_;  // a local copy: kept in registers across the calls below
        for (const Table& t : tables_)
            for (const ElfW(Rela)* r = t.rela, *end = t.rela + t.count; r != end; ++r) {
                const char* name = names.of(*r);
                Import imp;
                if (name && want(name) && complete(*r, name, imp)) fn(static_cast<const Import&>(imp));
            }
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

        const char* of(const ElfW(Rela) & r) const {
            if (arch::slot_kind(static_cast<std::uint32_t>(ELF64_R_TYPE(r.r_info))) == arch::SlotKind::none)
                return nullptr;
            auto sym = static_cast<std::uint64_t>(ELF64_R_SYM(r.r_info));
            if (sym == 0 || sym >= nsyms) return nullptr;
            std::uint32_t off = reinterpret_cast<const ElfW(Sym)*>(symtab + sym * syment)->st_name;
            if (off >= strsz) return nullptr;
            // A table that does not end with a NUL gets each name checked.
            if (!terminated && !std::memchr(strtab + off, 0, strsz - off)) return nullptr;
            return strtab + off;
        }
    };
    const ElfW(Phdr) * read_segments();
    Table table(std::uint64_t addr, std::uint64_t size, std::uint64_t skip) const;
    // The rest of an Import, for a relocation SymbolNames named.
    bool complete(const ElfW(Rela) & r, const char* name, Import& out) const;
    bool decode(const ElfW(Rela) & r, Import& out) const;
    const char* version_name(std::uint32_t sym) const;
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
    std::size_t verneednum_ = 0;
    Table tables_[2];  // DT_RELA, DT_JMPREL
};

// Whether the object's relocations are done, so its slots hold real values.
// dl_iterate_phdr lists an object as soon as it is mapped (another thread
// may still be inside dlopen) and until it is unmapped; glibc registers it
// for _dl_find_object only once it is relocated, and withdraws it first on
// dlclose.  Lock-free, allocation-free: for use inside the walk.
bool relocated(const dl_phdr_info& info);

}  // namespace ldshim::hooks
