// The best caller available for a call that reached ldshim by symbol (the
// preload's dlopen, found through dlsym(RTLD_NEXT), a saved pointer, or a
// slot another tool rewrote after ldshim): when the return address lies in
// a library that interposes dlopen, the real caller is further up the
// stack, past that library's wrapper.  Calls through an import slot never
// need this -- ldshim's front hooks know the slot's object exactly.
#include "hooks/engine.h"
#include "ldshim.h"
#include "resolver/settings.h"

#include <dlfcn.h>
#include <link.h>
#include <unwind.h>

#include <atomic>
#include <cstdint>

namespace {

struct Extent {
    std::uintptr_t lo = 0, hi = 0;
    const void* map = nullptr;
    bool contains(std::uintptr_t a) const { return a >= lo && a < hi; }
};

Extent extent_of(const void* addr) {
    dl_find_object found;
    if (_dl_find_object(const_cast<void*>(addr), &found) != 0) return {};
    return {reinterpret_cast<std::uintptr_t>(found.dlfo_map_start),
            reinterpret_cast<std::uintptr_t>(found.dlfo_map_end), found.dlfo_link_map};
}

// Whether the object defines dlopen itself (sanitizer runtimes, profilers,
// path translators).  Asked through a real handle (a dependency's link_map
// is not one), from libc's dlopen so that nothing interposed runs.
bool defines_dlopen(const Extent& e) {
    const auto* map = static_cast<const link_map*>(e.map);
    const char* name = map->l_name && *map->l_name ? map->l_name : nullptr;
    void* h = ldshim::resolver::libc_dlopen(name, RTLD_LAZY | RTLD_NOLOAD);
    if (!h) return false;
    auto f = reinterpret_cast<std::uintptr_t>(dlsym(h, "dlopen"));
    dlclose(h);
    return e.contains(f);
}

// The answer for the objects this thread asked about last: most calls come
// from the same few places.  Keyed by link_map and base, so an object
// mapped where an unloaded one was is asked again.
struct CacheEntry {
    const void* map;
    std::uintptr_t lo;
    bool defines;
};
[[gnu::tls_model("initial-exec")]] thread_local CacheEntry t_cache[4];
[[gnu::tls_model("initial-exec")]] thread_local unsigned t_next;

bool defines_dlopen_cached(const Extent& e) {
    for (const CacheEntry& c : t_cache)
        if (c.map == e.map && c.lo == e.lo) return c.defines;
    bool d = defines_dlopen(e);
    t_cache[t_next++ % 4] = {e.map, e.lo, d};
    return d;
}

// A GOT patcher that ran after ldshim holds a slot that ldshim had written
// and forwards by symbol: looked for on each such call (cheap: only the
// loader slots ldshim wrote are read), and the slot is put back in front.
bool interposes_dlopen(const Extent& e) {
    if (!e.map) return false;
    if (defines_dlopen_cached(e)) return true;
    return ldshim::hooks::Engine::instance().loader_slots_taken_by(e.lo, e.hi);
}

struct Walk {
    Extent skip[6];  // ldshim's libraries and the interposers seen so far
    int nskip = 0;
    int frames = 0;
    const void* found = nullptr;
};

bool skipped(const Walk& w, std::uintptr_t pc) {
    for (int i = 0; i < w.nskip; ++i)
        if (w.skip[i].contains(pc)) return true;
    return false;
}

_Unwind_Reason_Code step(_Unwind_Context* ctx, void* arg) {
    auto* w = static_cast<Walk*>(arg);
    if (++w->frames > 32) return _URC_END_OF_STACK;
    auto pc = static_cast<std::uintptr_t>(_Unwind_GetIP(ctx));
    if (!pc) return _URC_END_OF_STACK;
    if (skipped(*w, pc - 1)) return _URC_NO_REASON;  // pc - 1: inside the call instruction
    Extent e = extent_of(reinterpret_cast<const void*>(pc - 1));
    if (e.map && defines_dlopen_cached(e)) {
        if (w->nskip < 6) w->skip[w->nskip++] = e;
        return _URC_NO_REASON;
    }
    w->found = reinterpret_cast<const void*>(pc - 1);
    return _URC_END_OF_STACK;
}

}  // namespace

extern "C" const void* ldshim_caller_behind(const void* return_address) {
    if (!return_address) return return_address;
    Extent self = extent_of(reinterpret_cast<const void*>(&ldshim_caller_behind));
    if (self.contains(reinterpret_cast<std::uintptr_t>(return_address))) return return_address;  // ldshim's own call
    Extent e = extent_of(return_address);
    if (!interposes_dlopen(e)) return return_address;
    Walk w;
    w.skip[w.nskip++] = e;
    w.skip[w.nskip++] = self;
    _Unwind_Backtrace(step, &w);
    return w.found ? w.found : return_address;
}
