// The mapped extent of a loaded object (its PT_LOAD segments, from
// dl_iterate_phdr data), for readers of in-memory ELF structures: every
// pointer is checked against it before it is followed.
#pragma once

#include <link.h>

#include <cstddef>
#include <cstdint>

namespace ldshim::loader {

struct LoadedExtent {
    const ElfW(Phdr) * ph;
    std::size_t n;
    std::uintptr_t base;

    // Does [addr, addr+len) lie inside one PT_LOAD's memory image?
    bool contains(std::uintptr_t addr, std::size_t len = 1) const {
        for (std::size_t i = 0; i < n; ++i) {
            if (ph[i].p_type != PT_LOAD) continue;
            std::uintptr_t lo = base + ph[i].p_vaddr, hi = lo + ph[i].p_memsz;
            if (addr >= lo && addr <= hi && len <= hi - addr) return true;
        }
        return false;
    }

    // A d_ptr value of the dynamic section as an address of `len` bytes
    // inside the object, or 0.  glibc rewrites d_ptr values to run-time
    // addresses when the dynamic section is writable; a read-only one (the
    // vDSO) still holds link-time values.
    std::uintptr_t pointer(std::uint64_t value, std::size_t len) const {
        auto p = static_cast<std::uintptr_t>(value);
        if (contains(p, len)) return p;
        p += base;
        return contains(p, len) ? p : 0;
    }
};

}  // namespace ldshim::loader
