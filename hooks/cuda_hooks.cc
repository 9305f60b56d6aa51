// The CUDA hooks, with the signatures of the CUDA 13 headers.  Each one calls
// the function it replaced and returns its result unchanged; the outermost
// hooked call on a thread records: an allocation after it succeeded, a free
// before the real free runs (and puts the range back if the free failed).
#include "hooks/events.h"
#include "hooks/table.h"

#if LDSHIM_HAVE_CUDA_HEADERS

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstddef>

using namespace ldshim::hooks;
using ldshim::memtype::Type;

// Old ABI variants (cuGetProcAddress hands them out for old versions); cuda.h
// only declares them for the driver's own build.
using DevicePtrV1 = unsigned int;  // CUdeviceptr before CUDA 3.2
using CuGetProcAddressV1 = CUresult (*)(const char*, void**, int, cuuint64_t);

static_assert(offsetof(CUmemAllocationProp, location.type) == 8 && offsetof(CUmemAllocationProp, location.id) == 12,
              "events.cc reads the location of a CUmemAllocationProp at these offsets");

namespace {

constexpr CUresult kDriverNoTarget = CUDA_ERROR_NOT_INITIALIZED;
constexpr cudaError_t kRuntimeNoTarget = cudaErrorInitializationError;

inline std::uintptr_t addr(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

// The real function for a hook, typed like the hook itself.  Only ever
// pasted or stringised, in every macro below: a macro argument passed on to
// another macro is expanded first, and cuda.h defines cuMemAlloc as
// cuMemAlloc_v2.
#define REAL(name) next<decltype(&ldshim_hook_##name)>(HookId::k_##name)

}  // namespace

extern "C" {
#define HOOK extern "C" [[gnu::visibility("hidden")]]

// ---- Runtime: allocations ------------------------------------------------
// The one recipe of an allocation hook: call what the slot held, and on
// success (and outside ldshim's own calls) record the range.  The runtime
// and the driver differ only in their result type and codes.  `fn`, `id`
// and `label` come pasted and quoted from the entry's name by the wrappers
// below: cuda.h defines some names as macros (cuMemAlloc is cuMemAlloc_v2),
// which a name passed on unpasted would become.
#define ALLOC_HOOK(ret, no_target, success, fn, id, label, type, params, args, base_expr, len_expr, device_expr) \
    HOOK ret fn params {                                                                                         \
        auto real = next<decltype(&fn)>(HookId::id);                                                             \
        if (!real) return no_target;                                                                             \
        ReentryGuard g;                                                                                          \
        ret r = real args;                                                                                       \
        if (r == success && g.record()) on_alloc(type, base_expr, len_expr, device_expr, label);                 \
        return r;                                                                                                \
    }
// The one recipe of a free hook: forget the range first (a racing
// allocation may reuse it at once), put it back if the free fails.
#define FREE_HOOK(ret, no_target, success, fn, id, label, params, args, base) \
    HOOK ret fn params {                                                      \
        auto real = next<decltype(&fn)>(HookId::id);                          \
        if (!real) return no_target;                                          \
        ReentryGuard g;                                                       \
        Removed rm;                                                           \
        if (g.record()) rm = on_free(base, label);                            \
        ret r = real args;                                                    \
        if (r != success) undo_free(rm, label);                               \
        return r;                                                             \
    }
#define RT_ALLOC(name, ...) \
    ALLOC_HOOK(cudaError_t, kRuntimeNoTarget, cudaSuccess, ldshim_hook_##name, k_##name, #name, __VA_ARGS__)

// A table, one hooked function per entry:
// clang-format off
RT_ALLOC(cudaMalloc, Type::cuda, (void** p, size_t n), (p, n), addr(*p), n, runtime_device())
RT_ALLOC(cudaMallocManaged, Type::cuda_managed, (void** p, size_t n, unsigned f), (p, n, f), addr(*p), n, runtime_device())
RT_ALLOC(cudaMallocPitch, Type::cuda, (void** p, size_t* pitch, size_t w, size_t h), (p, pitch, w, h), addr(*p),
         *pitch * h, runtime_device())
RT_ALLOC(cudaMalloc3D, Type::cuda, (cudaPitchedPtr* pp, cudaExtent e), (pp, e), addr(pp->ptr),
         pp->pitch * e.height * e.depth, runtime_device())
RT_ALLOC(cudaMallocAsync, Type::cuda, (void** p, size_t n, cudaStream_t s), (p, n, s), addr(*p), n, runtime_device())
RT_ALLOC(cudaMallocAsync_ptsz, Type::cuda, (void** p, size_t n, cudaStream_t s), (p, n, s), addr(*p), n,
         runtime_device())
RT_ALLOC(cudaMallocFromPoolAsync, Type::cuda, (void** p, size_t n, cudaMemPool_t m, cudaStream_t s), (p, n, m, s),
         addr(*p), n, runtime_device())
RT_ALLOC(cudaMallocFromPoolAsync_ptsz, Type::cuda, (void** p, size_t n, cudaMemPool_t m, cudaStream_t s),
         (p, n, m, s), addr(*p), n, runtime_device())
RT_ALLOC(cudaMallocHost, Type::host_pinned, (void** p, size_t n), (p, n), addr(*p), n, -1)
RT_ALLOC(cudaHostAlloc, Type::host_pinned, (void** p, size_t n, unsigned f), (p, n, f), addr(*p), n, -1)
RT_ALLOC(cudaHostRegister, Type::host_pinned, (void* p, size_t n, unsigned f), (p, n, f), addr(p), n, -1)
// clang-format on

HOOK cudaError_t ldshim_hook_cudaIpcOpenMemHandle(void** p, cudaIpcMemHandle_t handle, unsigned flags) {
    auto real = REAL(cudaIpcOpenMemHandle);
    if (!real) return kRuntimeNoTarget;
    ReentryGuard g;
    cudaError_t r = real(p, handle, flags);
    std::uintptr_t base = 0;
    std::size_t size = 0;
    if (r == cudaSuccess && g.record()) {
        ensure_driver_companions();
        if (driver_range(addr(*p), &base, &size))
            on_alloc(Type::cuda, base, size, runtime_device(), "cudaIpcOpenMemHandle");
    }
    return r;
}

// ---- Runtime: frees --------------------------------------------------------
#define RT_FREE(name, params, args, ptr) \
    FREE_HOOK(cudaError_t, kRuntimeNoTarget, cudaSuccess, ldshim_hook_##name, k_##name, #name, params, args, addr(ptr))

RT_FREE(cudaFree, (void* p), (p), p)
RT_FREE(cudaFreeAsync, (void* p, cudaStream_t s), (p, s), p)
RT_FREE(cudaFreeAsync_ptsz, (void* p, cudaStream_t s), (p, s), p)
RT_FREE(cudaFreeHost, (void* p), (p), p)
RT_FREE(cudaHostUnregister, (void* p), (p), p)
RT_FREE(cudaIpcCloseMemHandle, (void* p), (p), p)

// ---- Runtime: driver entry points ------------------------------------------
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
HOOK cudaError_t ldshim_hook_cudaGetDriverEntryPoint(const char* sym, void** fn, unsigned long long flags,
                                                     cudaDriverEntryPointQueryResult* status) {
    auto real = REAL(cudaGetDriverEntryPoint);
    if (!real) return kRuntimeNoTarget;
    cudaError_t r = real(sym, fn, flags, status);
    if (r == cudaSuccess && fn) *fn = hook_proc_address(*fn);
    return r;
}
HOOK cudaError_t ldshim_hook_cudaGetDriverEntryPoint_ptsz(const char* sym, void** fn, unsigned long long flags,
                                                          cudaDriverEntryPointQueryResult* status) {
    auto real = REAL(cudaGetDriverEntryPoint_ptsz);
    if (!real) return kRuntimeNoTarget;
    cudaError_t r = real(sym, fn, flags, status);
    if (r == cudaSuccess && fn) *fn = hook_proc_address(*fn);
    return r;
}
#pragma GCC diagnostic pop
HOOK cudaError_t ldshim_hook_cudaGetDriverEntryPointByVersion(const char* sym, void** fn, unsigned version,
                                                              unsigned long long flags,
                                                              cudaDriverEntryPointQueryResult* status) {
    auto real = REAL(cudaGetDriverEntryPointByVersion);
    if (!real) return kRuntimeNoTarget;
    cudaError_t r = real(sym, fn, version, flags, status);
    if (r == cudaSuccess && fn) *fn = hook_proc_address(*fn);
    return r;
}
HOOK cudaError_t ldshim_hook_cudaGetDriverEntryPointByVersion_ptsz(const char* sym, void** fn, unsigned version,
                                                                   unsigned long long flags,
                                                                   cudaDriverEntryPointQueryResult* status) {
    auto real = REAL(cudaGetDriverEntryPointByVersion_ptsz);
    if (!real) return kRuntimeNoTarget;
    cudaError_t r = real(sym, fn, version, flags, status);
    if (r == cudaSuccess && fn) *fn = hook_proc_address(*fn);
    return r;
}

// ---- Driver: allocations ----------------------------------------------------
#define DRV_ALLOC(name, ...) \
    ALLOC_HOOK(CUresult, kDriverNoTarget, CUDA_SUCCESS, ldshim_hook_##name, k_##name, #name, __VA_ARGS__)

// A table, one hooked function per entry:
// clang-format off
DRV_ALLOC(cuMemAlloc, Type::cuda, (DevicePtrV1* p, unsigned n), (p, n), *p, n, driver_device())
DRV_ALLOC(cuMemAlloc_v2, Type::cuda, (CUdeviceptr* p, size_t n), (p, n), *p, n, driver_device())
DRV_ALLOC(cuMemAllocPitch, Type::cuda, (DevicePtrV1* p, unsigned* pitch, unsigned w, unsigned h, unsigned e),
          (p, pitch, w, h, e), *p, std::size_t{*pitch} * h, driver_device())
DRV_ALLOC(cuMemAllocPitch_v2, Type::cuda, (CUdeviceptr* p, size_t* pitch, size_t w, size_t h, unsigned e),
          (p, pitch, w, h, e), *p, *pitch * h, driver_device())
DRV_ALLOC(cuMemAllocManaged, Type::cuda_managed, (CUdeviceptr* p, size_t n, unsigned f), (p, n, f), *p, n,
          driver_device())
DRV_ALLOC(cuMemAllocAsync, Type::cuda, (CUdeviceptr* p, size_t n, CUstream s), (p, n, s), *p, n, driver_device())
DRV_ALLOC(cuMemAllocAsync_ptsz, Type::cuda, (CUdeviceptr* p, size_t n, CUstream s), (p, n, s), *p, n,
          driver_device())
DRV_ALLOC(cuMemAllocFromPoolAsync, Type::cuda, (CUdeviceptr* p, size_t n, CUmemoryPool m, CUstream s), (p, n, m, s),
          *p, n, driver_device())
DRV_ALLOC(cuMemAllocFromPoolAsync_ptsz, Type::cuda, (CUdeviceptr* p, size_t n, CUmemoryPool m, CUstream s),
          (p, n, m, s), *p, n, driver_device())
DRV_ALLOC(cuMemAllocHost, Type::host_pinned, (void** p, unsigned n), (p, n), addr(*p), n, -1)
DRV_ALLOC(cuMemAllocHost_v2, Type::host_pinned, (void** p, size_t n), (p, n), addr(*p), n, -1)
DRV_ALLOC(cuMemHostAlloc, Type::host_pinned, (void** p, size_t n, unsigned f), (p, n, f), addr(*p), n, -1)
DRV_ALLOC(cuMemHostRegister, Type::host_pinned, (void* p, size_t n, unsigned f), (p, n, f), addr(p), n, -1)
DRV_ALLOC(cuMemHostRegister_v2, Type::host_pinned, (void* p, size_t n, unsigned f), (p, n, f), addr(p), n, -1)
// clang-format on

#define DRV_IPC_OPEN(name)                                                                    \
    HOOK CUresult ldshim_hook_##name(CUdeviceptr* p, CUipcMemHandle handle, unsigned flags) { \
        auto real = next<decltype(&ldshim_hook_##name)>(HookId::k_##name);                    \
        if (!real) return kDriverNoTarget;                                                    \
        ReentryGuard g;                                                                       \
        CUresult r = real(p, handle, flags);                                                  \
        std::uintptr_t base = 0;                                                              \
        std::size_t size = 0;                                                                 \
        if (r == CUDA_SUCCESS && g.record() && driver_range(*p, &base, &size))                \
            on_alloc(Type::cuda, base, size, driver_device(), #name);                         \
        return r;                                                                             \
    }
DRV_IPC_OPEN(cuIpcOpenMemHandle)
DRV_IPC_OPEN(cuIpcOpenMemHandle_v2)

// cuMemCreate makes physical memory with no address; cuMemMap gives it one.
HOOK CUresult ldshim_hook_cuMemCreate(CUmemGenericAllocationHandle* h, size_t n, const CUmemAllocationProp* prop,
                                      unsigned long long flags) {
    auto real = REAL(cuMemCreate);
    return real ? real(h, n, prop, flags) : kDriverNoTarget;
}
HOOK CUresult ldshim_hook_cuMemRelease(CUmemGenericAllocationHandle h) {
    auto real = REAL(cuMemRelease);
    return real ? real(h) : kDriverNoTarget;
}
HOOK CUresult ldshim_hook_cuMemMap(CUdeviceptr p, size_t n, size_t offset, CUmemGenericAllocationHandle h,
                                   unsigned long long flags) {
    auto real = REAL(cuMemMap);
    if (!real) return kDriverNoTarget;
    ReentryGuard g;
    CUresult r = real(p, n, offset, h, flags);
    if (r == CUDA_SUCCESS && g.record()) {
        int loc = 0, id = -1;
        Type t = Type::cuda;
        if (driver_handle_location(h, &loc, &id) && loc != CU_MEM_LOCATION_TYPE_DEVICE) {
            t = Type::host_pinned;
            id = -1;
        }
        on_alloc(t, p, n, id, "cuMemMap");
    }
    return r;
}

// ---- Driver: frees ----------------------------------------------------------
#define DRV_FREE(name, params, args, ptr) \
    FREE_HOOK(CUresult, kDriverNoTarget, CUDA_SUCCESS, ldshim_hook_##name, k_##name, #name, params, args, ptr)

DRV_FREE(cuMemFree, (DevicePtrV1 p), (p), p)
DRV_FREE(cuMemFree_v2, (CUdeviceptr p), (p), p)
DRV_FREE(cuMemFreeAsync, (CUdeviceptr p, CUstream s), (p, s), p)
DRV_FREE(cuMemFreeAsync_ptsz, (CUdeviceptr p, CUstream s), (p, s), p)
DRV_FREE(cuMemFreeHost, (void* p), (p), addr(p))
DRV_FREE(cuMemHostUnregister, (void* p), (p), addr(p))
DRV_FREE(cuIpcCloseMemHandle, (CUdeviceptr p), (p), p)

HOOK CUresult ldshim_hook_cuMemUnmap(CUdeviceptr p, size_t n) {
    auto real = REAL(cuMemUnmap);
    if (!real) return kDriverNoTarget;
    ReentryGuard g;
    Removed rm;
    if (g.record()) rm = on_free_range(p, n, "cuMemUnmap");
    CUresult r = real(p, n);
    if (r != CUDA_SUCCESS) undo_free(rm, "cuMemUnmap");
    return r;
}

// ---- Driver: entry points ---------------------------------------------------
HOOK CUresult ldshim_hook_cuGetProcAddress(const char* sym, void** fn, int version, cuuint64_t flags) {
    auto real = reinterpret_cast<CuGetProcAddressV1>(g_next[static_cast<int>(HookId::k_cuGetProcAddress)].load());
    if (!real) return kDriverNoTarget;
    CUresult r = real(sym, fn, version, flags);
    if (r == CUDA_SUCCESS && fn) *fn = hook_proc_address(*fn);
    return r;
}
HOOK CUresult ldshim_hook_cuGetProcAddress_v2(const char* sym, void** fn, int version, cuuint64_t flags,
                                              CUdriverProcAddressQueryResult* status) {
    auto real = REAL(cuGetProcAddress_v2);
    if (!real) return kDriverNoTarget;
    CUresult r = real(sym, fn, version, flags, status);
    if (r == CUDA_SUCCESS && fn) *fn = hook_proc_address(*fn);
    return r;
}

}  // extern "C"

namespace ldshim::hooks {
bool cuda_hooks_built() { return true; }
}  // namespace ldshim::hooks

#else  // no CUDA headers at build time: the weak references stay null

namespace ldshim::hooks {
bool cuda_hooks_built() { return false; }
}  // namespace ldshim::hooks

#endif
