// Which loaded object holds an address: its mapped extent and its link_map.
//
// glibc 2.35 and later answer without a lock and without allocating
// (_dl_find_object); that is what the hot paths rely on.  Before 2.35 the
// answer comes from one walk of the loaded objects plus dladdr1, under the
// loader's lock: correct, slower, and not to be called from inside a walk.
#pragma once

#include <cstdint>
#include <optional>

namespace ldshim::host {

struct ObjectExtent {
    std::uintptr_t lo = 0, hi = 0;  // [lo, hi): from its lowest to its highest mapped segment
    const void* link_map = nullptr;
    bool contains(std::uintptr_t a) const { return a >= lo && a < hi; }
};

std::optional<ObjectExtent> find_object(const void* addr) noexcept;
// An address in the object that defines glibc's dl* functions (libc from
// 2.34, libdl before), unless a program that is not position-independent
// took it first (then its PLT entry): the function find_object calls.
// Each libc function whose address libldshim takes is one more symbol
// looked up through every loaded object at every start-up; this one is
// looked up anyway.
const void* dl_functions_anchor() noexcept;
// Whether find_object() answers without a walk (glibc 2.35 and later).
bool find_object_is_lock_free() noexcept;

// Whether the loader already lists the object mapped at `addr` for lookups
// by address, which glibc 2.35 and later do only once it is relocated.
// Callable from inside a walk of the loaded objects.  Before 2.35 there is
// no such list and the answer is always true (an object seen in the middle
// of its own dlopen may then be patched before its relocation, which writes
// its slots again: the next scan patches them).
bool loader_lists_by_address(const void* addr) noexcept;

}  // namespace ldshim::host
