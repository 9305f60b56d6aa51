#include "host/find_object.h"

#include "host/loaded_objects.h"

#include <dlfcn.h>
#include <link.h>

namespace ldshim::host {

#if defined(DLFO_STRUCT_HAS_EH_DBASE)  // <dlfcn.h> of glibc 2.35 and later

namespace {
// Called through its address, which the loader binds with libldshim (one
// lookup, as the first call through the PLT would make) and which is
// dl_functions_anchor's answer.  volatile: the compiler would turn a call
// through a known address back into a call through the PLT, a second
// lookup.
int (*volatile const g_find)(void*, dl_find_object*) = &_dl_find_object;
}  // namespace

const void* dl_functions_anchor() noexcept { return reinterpret_cast<const void*>(g_find); }

std::optional<ObjectExtent> find_object(const void* addr) noexcept {
    dl_find_object found;
    if (g_find(const_cast<void*>(addr), &found) != 0) return std::nullopt;
    return ObjectExtent{reinterpret_cast<std::uintptr_t>(found.dlfo_map_start),
                        reinterpret_cast<std::uintptr_t>(found.dlfo_map_end), found.dlfo_link_map};
}

bool find_object_is_lock_free() noexcept { return true; }

bool loader_lists_by_address(const void* addr) noexcept {
    dl_find_object found;
    return g_find(const_cast<void*>(addr), &found) == 0 && found.dlfo_map_start <= addr && addr < found.dlfo_map_end;
}

#else

std::optional<ObjectExtent> find_object(const void* addr) noexcept {
    auto a = reinterpret_cast<std::uintptr_t>(addr);
    std::optional<ObjectExtent> out;
    // The walk only copies numbers; dladdr1 runs after it.
    for_each_loaded([&](const dl_phdr_info& info, const LoadCounters&) {
        std::uintptr_t lo = UINTPTR_MAX, hi = 0;
        for_each_segment(info, [&](const Segment& g) {
            lo = std::min(lo, g.lo & ~std::uintptr_t{0xfff});
            hi = std::max(hi, (g.hi + 0xfff) & ~std::uintptr_t{0xfff});
        });
        if (a < lo || a >= hi) return true;
        out = ObjectExtent{lo, hi, nullptr};
        return false;
    });
    if (!out) return std::nullopt;
    Dl_info info;
    void* map = nullptr;
    if (dladdr1(addr, &info, &map, RTLD_DL_LINKMAP) != 0) out->link_map = map;
    return out;
}

bool find_object_is_lock_free() noexcept { return false; }

const void* dl_functions_anchor() noexcept { return reinterpret_cast<const void*>(&dladdr1); }

bool loader_lists_by_address(const void*) noexcept { return true; }

#endif

}  // namespace ldshim::host
