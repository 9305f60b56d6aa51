// The best caller available for a call that reached ldshim by symbol (the
// preload's dlopen, found through dlsym(RTLD_NEXT), a saved pointer, or a
// slot another tool rewrote after ldshim): when the return address lies in
// a library that interposes dlopen, the real caller is further up the
// stack, past that library's wrapper.  Calls through an import slot never
// need this -- ldshim's front hooks know the slot's object exactly.
#include "hooks/patcher.h"
#include "host/find_object.h"
#include "host/libc.h"
#include "host/settings.h"
#include "ldshim.h"

#include <dlfcn.h>
#include <link.h>
#include <unwind.h>

#include <atomic>
#include <cstdint>

namespace {

using Extent = ldshim::host::ObjectExtent;

// The object holding addr; an empty extent (no link map) for none.
Extent extent_of(const void* addr) { return ldshim::host::find_object(addr).value_or(Extent{}); }

// Whether the object defines dlopen itself (sanitizer runtimes, profilers,
// path translators).  Asked through a real handle (a dependency's link_map
// is not one), from libc's dlopen so that nothing interposed runs.
// 1 yes, 0 no, -1 cannot tell yet (glibc's dlopen not found yet: this is
// ldshim's own start-up) -- an answer that must not be kept.
int defines_dlopen(const Extent& e) {
    const auto* map = static_cast<const link_map*>(e.link_map);
    const char* name = map->l_name && *map->l_name ? map->l_name : nullptr;
    void* h = ldshim::host::libc_dlopen(name, RTLD_LAZY | RTLD_NOLOAD);
    if (!h) return -1;
    auto f = reinterpret_cast<std::uintptr_t>(dlsym(h, "dlopen"));
    dlclose(h);
    return e.contains(f) ? 1 : 0;
}

// The answer for each object, asked once: a small table shared by all
// threads, without a lock.  An entry is the link_map (published last) and
// the object's base with the answer in bit 0 (bases are page-aligned); a
// reader trusts an entry only if the map it read before and after agrees.
// A collision simply asks again.
struct CacheEntry {
    std::atomic<const void*> map{nullptr};
    std::atomic<std::uintptr_t> base_and_answer{0};
};
constexpr std::size_t kCache = 256;
CacheEntry g_cache[kCache];

bool defines_dlopen_cached(const Extent& e) {
    CacheEntry& c = g_cache[(reinterpret_cast<std::uintptr_t>(e.link_map) >> 4) % kCache];
    const void* before = c.map.load(std::memory_order_acquire);
    std::uintptr_t v = c.base_and_answer.load(std::memory_order_acquire);
    if (before == e.link_map && c.map.load(std::memory_order_acquire) == e.link_map && (v & ~std::uintptr_t{1}) == e.lo)
        return (v & 1) != 0;
    int d = defines_dlopen(e);
    if (d < 0) return false;
    c.map.store(nullptr, std::memory_order_release);
    c.base_and_answer.store(e.lo | static_cast<std::uintptr_t>(d), std::memory_order_release);
    c.map.store(e.link_map, std::memory_order_release);
    return d == 1;
}

// A GOT patcher that ran after ldshim holds a slot that ldshim had written
// or watched, and forwards by symbol.  Patchers write slots when they are
// loaded (constructors) or when they load something, so the slots are read
// again only after objects came or went -- once per change of
// dl_iterate_phdr's counters, not on every call.
// The counters as one word (a 16-byte atomic would need libatomic); the
// initial value is never a real one, so the first call checks.
std::atomic<unsigned long long> g_checked_at{~0ull};

bool interposes_dlopen(const Extent& e) {
    if (!e.link_map) return false;
    if (defines_dlopen_cached(e)) return true;
    if (!ldshim::host::settings_ready()) return false;  // start-up: the slots are being written now
    ldshim::host::LoadCounters c = ldshim::host::load_counters();
    unsigned long long g = c.adds + (c.subs << 32);
    if (g_checked_at.load(std::memory_order_acquire) == g) return false;
    // Every taken slot is put back in front, whoever took it: the
    // generation is then settled for all callers.
    bool theirs = ldshim::hooks::Patcher::instance().reclaim_loader_slots(e.lo, e.hi);
    g_checked_at.store(g, std::memory_order_release);
    return theirs;
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
    if (e.link_map && defines_dlopen_cached(e)) {
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
