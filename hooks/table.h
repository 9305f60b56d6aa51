// Every function ldshim hooks, as one X-macro list, so that the id of a
// hook, its name, its kind and its "next" pointer (what it calls) cannot
// drift apart.  Names are only ever stringised or pasted here: cuda.h
// #defines some of them (cuMemAlloc -> cuMemAlloc_v2), and stringising keeps
// the exported name that a slot's relocation uses.
#pragma once

#include <atomic>
#include <cstdint>

// X(name, kind): kind is loader, proc, runtime or driver.
// A table, one hooked function per entry:
// clang-format off
#define LDSHIM_HOOK_LIST(X)                                                                  \
    X(dlopen, loader) X(dlclose, loader) X(dlsym, loader) X(dlvsym, loader) X(dlmopen, loader) \
    X(cuGetProcAddress, proc) X(cuGetProcAddress_v2, proc)                                  \
    X(cudaGetDriverEntryPoint, proc) X(cudaGetDriverEntryPoint_ptsz, proc)                   \
    X(cudaGetDriverEntryPointByVersion, proc) X(cudaGetDriverEntryPointByVersion_ptsz, proc) \
    X(cudaMalloc, runtime) X(cudaMallocManaged, runtime) X(cudaMallocPitch, runtime)         \
    X(cudaMalloc3D, runtime) X(cudaMallocAsync, runtime) X(cudaMallocAsync_ptsz, runtime)    \
    X(cudaMallocFromPoolAsync, runtime) X(cudaMallocFromPoolAsync_ptsz, runtime)             \
    X(cudaFree, runtime) X(cudaFreeAsync, runtime) X(cudaFreeAsync_ptsz, runtime)            \
    X(cudaMallocHost, runtime) X(cudaHostAlloc, runtime) X(cudaFreeHost, runtime)            \
    X(cudaHostRegister, runtime) X(cudaHostUnregister, runtime)                              \
    X(cudaIpcOpenMemHandle, runtime) X(cudaIpcCloseMemHandle, runtime)                       \
    X(cuMemAlloc, driver) X(cuMemAlloc_v2, driver)                                           \
    X(cuMemAllocPitch, driver) X(cuMemAllocPitch_v2, driver)                                 \
    X(cuMemAllocManaged, driver)                                                             \
    X(cuMemAllocAsync, driver) X(cuMemAllocAsync_ptsz, driver)                               \
    X(cuMemAllocFromPoolAsync, driver) X(cuMemAllocFromPoolAsync_ptsz, driver)               \
    X(cuMemFree, driver) X(cuMemFree_v2, driver)                                             \
    X(cuMemFreeAsync, driver) X(cuMemFreeAsync_ptsz, driver)                                 \
    X(cuMemAllocHost, driver) X(cuMemAllocHost_v2, driver) X(cuMemHostAlloc, driver)         \
    X(cuMemFreeHost, driver) X(cuMemHostRegister, driver) X(cuMemHostRegister_v2, driver)    \
    X(cuMemHostUnregister, driver)                                                           \
    X(cuMemCreate, driver) X(cuMemMap, driver) X(cuMemUnmap, driver) X(cuMemRelease, driver) \
    X(cuIpcOpenMemHandle, driver) X(cuIpcOpenMemHandle_v2, driver) X(cuIpcCloseMemHandle, driver)
// clang-format on

namespace ldshim::hooks {

enum class HookKind : std::uint8_t { loader, proc, runtime, driver };

enum class HookId : int {
#define LDSHIM_X(name, kind) k_##name,
    LDSHIM_HOOK_LIST(LDSHIM_X)
#undef LDSHIM_X
        count
};
constexpr int kHookCount = static_cast<int>(HookId::count);

struct HookDef {
    const char* name;
    const char* version;  // the only symbol version an import may name; nullptr: any
    HookKind kind;
    void* fn;  // the hook; nullptr when this build lacks it (no CUDA headers)
};

// Indexed by HookId.
const HookDef& hook_def(int id);
// Whether a name could be hooked at all: every hooked name starts with "cu"
// or "dl".  Inline, because a scan asks it of nearly every relocation of
// every object and nearly every answer is no.
inline bool may_be_hooked(const char* name) {
    return (name[0] == 'c' && name[1] == 'u') || (name[0] == 'd' && name[1] == 'l');
}
// The id for an exported name, or -1.
int find_hook(const char* name);
// The id of the hook whose function is at `fn`, or -1.
int hook_at(std::uintptr_t fn);

// What each hook calls.  Published (release) before any slot points at the
// hook; never cleared, so a hook is callable for the life of the process.
extern std::atomic<void*> g_next[kHookCount];
template <class F>
inline F next(HookId id) {
    return reinterpret_cast<F>(g_next[static_cast<int>(id)].load(std::memory_order_acquire));
}

// Publishes `fn` as what hook `id` calls unless another function is
// published; says whether it did, and puts what is published now in
// *current.  A function whose object has been unloaded since it was
// published counts as none: it is no one's function any more.
bool publish_next(int id, void* fn, void** current);
// Publishes `fn` in place of what hook `id` calls (another hooker took over).
void replace_next(int id, void* fn);
// Whether hook `id` was handed out by name (dlsym, a driver entry point): a
// tool may hold it as the original its own hook calls.
extern std::atomic<bool> g_handed_out[kHookCount];

// The interception paths in use (LDSHIM_PATH_* bits).
extern std::atomic<unsigned> g_active_paths;
unsigned path_bit(HookKind k);

// Whether hook `id` belongs to a set of LDSHIM_HOOK_* flags: LDSHIM_HOOK_DLOPEN
// is the loader's entry points (dlopen, dlmopen, and dlclose to follow
// objects); LDSHIM_HOOK_CUDA is everything.
bool in_hook_set(int id, unsigned flags);

// Defined by cuda_hooks.cc: whether the CUDA hooks were built.
bool cuda_hooks_built();

}  // namespace ldshim::hooks
