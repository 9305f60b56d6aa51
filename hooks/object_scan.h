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
    bool contains(std::uintptr_t addr, std::size_t len = 1) const { return extent_.contains(addr, len); }
    // Is the word at addr in a writable segment and outside the range that
    // glibc makes read-only after relocation (PT_GNU_RELRO, whole pages)?
    bool plainly_writable(std::uintptr_t addr) const;

    // Calls fn(const Import&) for every slot relocation whose symbol name
    // passes want(const char*).  Malformed entries are skipped.
    template <class Want, class Fn>
    void for_each(Want&& want, Fn&& fn) const {
        for (const Table& t : tables_) {
            if (!t.rela) continue;
            for (std::size_t i = 0; i < t.count; ++i) {
                const ElfW(Rela)& r = t.rela[i];
                Import imp;
                if (decode(r, imp) && want(imp.name)) fn(static_cast<const Import&>(imp));
            }
        }
    }

private:
    struct Table {
        const ElfW(Rela) * rela = nullptr;
        std::size_t count = 0;
    };
    bool decode(const ElfW(Rela) & r, Import& out) const;
    const char* version_name(std::uint32_t sym) const;
    std::uintptr_t pointer(std::uint64_t value, std::size_t len) const { return extent_.pointer(value, len); }

    const dl_phdr_info& info_;
    loader::LoadedExtent extent_;
    const char* error_ = nullptr;
    bool marker_ = false;
    const ElfW(Sym) * symtab_ = nullptr;
    std::size_t syment_ = sizeof(ElfW(Sym));
    const char* strtab_ = nullptr;
    std::size_t strsz_ = 0;
    const ElfW(Half) * versym_ = nullptr;
    const ElfW(Verneed) * verneed_ = nullptr;
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
