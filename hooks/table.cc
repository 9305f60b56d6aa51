#include "hooks/table.h"

#include "host/find_object.h"
#include "host/libc.h"
#include "ldshim.h"

#include <algorithm>
#include <array>
#include <cstring>

namespace ldshim::hooks {

// The hook functions, defined in interpose.cc and cuda_hooks.cc (weakly
// declared: a build without CUDA headers has no CUDA hooks).
#define LDSHIM_X(name, kind) extern "C" [[gnu::weak, gnu::visibility("hidden")]] void ldshim_hook_##name();
LDSHIM_HOOK_LIST(LDSHIM_X)
#undef LDSHIM_X

namespace {

constexpr const char* kRuntimeVersion = "libcudart.so.13";  // the headers the signatures come from

// cudart's symbols are versioned; the hooks' signatures are CUDA 13's, so an
// import that names another cudart version is left alone.  The driver's
// symbols are not versioned.
constexpr const char* version_for(const char* name, HookKind k) {
    bool cudart = k == HookKind::runtime || (k == HookKind::proc && name[2] == 'd');  // "cuda..."
    return cudart ? kRuntimeVersion : nullptr;
}

const std::array<HookDef, kHookCount>& defs() {
    static const std::array<HookDef, kHookCount> d = {{
#define LDSHIM_X(name, kind_) \
    {#name, version_for(#name, HookKind::kind_), HookKind::kind_, reinterpret_cast<void*>(&ldshim_hook_##name)},
        LDSHIM_HOOK_LIST(LDSHIM_X)
#undef LDSHIM_X
    }};
    return d;
}

// Ids sorted by name, for find_hook.
const std::array<int, kHookCount>& by_name() {
    static const std::array<int, kHookCount> order = [] {
        std::array<int, kHookCount> o{};
        for (int i = 0; i < kHookCount; ++i) o[static_cast<std::size_t>(i)] = i;
        std::sort(o.begin(), o.end(), [](int a, int b) {
            return std::strcmp(defs()[static_cast<std::size_t>(a)].name, defs()[static_cast<std::size_t>(b)].name) < 0;
        });
        return o;
    }();
    return order;
}

}  // namespace

std::atomic<void*> g_next[kHookCount];
std::atomic<bool> g_handed_out[kHookCount];
std::atomic<unsigned> g_active_paths{0};

namespace {
// Where each published function lives, to tell when its object has gone:
// the start of its object (0 when it lies in none: a tool's code in
// anonymous memory stays valid), and whether that object exported it under
// the hook's name (another object mapped at the same start later does not).
struct Home {
    std::atomic<std::uintptr_t> lo;
    std::atomic<bool> exported;
};
Home g_next_home[kHookCount];

void note_home(int id, const void* fn) {
    auto o = host::find_object(fn);
    g_next_home[id].exported.store(o && host::exported_at(fn, hook_def(id).name), std::memory_order_relaxed);
    g_next_home[id].lo.store(o ? o->lo : 0, std::memory_order_release);
}

bool gone(int id, const void* fn) {
    const std::uintptr_t lo = g_next_home[id].lo.load(std::memory_order_acquire);
    if (!lo) return false;
    auto o = host::find_object(fn);
    if (!o || o->lo != lo) return true;
    return g_next_home[id].exported.load(std::memory_order_relaxed) && !host::exported_at(fn, hook_def(id).name);
}
}  // namespace

bool publish_next(int id, void* fn, void** current) {
    void* expected = g_next[id].load(std::memory_order_acquire);
    if (expected && gone(id, expected) && g_next[id].compare_exchange_strong(expected, nullptr)) expected = nullptr;
    const bool published = !expected && g_next[id].compare_exchange_strong(expected, fn);
    if (published) note_home(id, fn);
    *current = published ? fn : expected;
    return published;
}

void replace_next(int id, void* fn) {
    g_next[id].store(fn, std::memory_order_release);
    note_home(id, fn);
}

const HookDef& hook_def(int id) { return defs()[static_cast<std::size_t>(id)]; }

int find_hook(const char* name) {
    if (!may_be_hooked(name)) return -1;
    const auto& o = by_name();
    auto it = std::lower_bound(o.begin(), o.end(), name, [](int id, const char* n) {
        return std::strcmp(defs()[static_cast<std::size_t>(id)].name, n) < 0;
    });
    if (it == o.end() || std::strcmp(defs()[static_cast<std::size_t>(*it)].name, name) != 0) return -1;
    return defs()[static_cast<std::size_t>(*it)].fn ? *it : -1;
}

int hook_at(std::uintptr_t fn) {
    if (!fn) return -1;
    for (int i = 0; i < kHookCount; ++i)
        if (reinterpret_cast<std::uintptr_t>(defs()[static_cast<std::size_t>(i)].fn) == fn) return i;
    return -1;
}

bool in_hook_set(int id, unsigned flags) {
    if (flags & LDSHIM_HOOK_CUDA) return true;
    auto h = static_cast<HookId>(id);
    return (flags & LDSHIM_HOOK_DLOPEN) && (h == HookId::k_dlopen || h == HookId::k_dlmopen || h == HookId::k_dlclose);
}

unsigned path_bit(HookKind k) {
    switch (k) {
        case HookKind::loader: return LDSHIM_PATH_DLOPEN;  // dlsym/dlvsym: see the patcher
        case HookKind::proc: return LDSHIM_PATH_PROC_ADDRESS;
        case HookKind::runtime:
        case HookKind::driver: return LDSHIM_PATH_GOT;
    }
    return 0;
}

}  // namespace ldshim::hooks
