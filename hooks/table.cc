#include "hooks/table.h"

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
std::atomic<unsigned> g_active_paths{0};

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
