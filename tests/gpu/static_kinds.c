/* A program that knows nothing of ldshim, linked with the static cudart
 * (nvcc -cudart static), run under LD_PRELOAD=libldshim_preload.so with
 * LDSHIM_CUDA_HOOKS=1.  Its runtime calls reach the driver only through
 * cuGetProcAddress (the entry-point path); its own driver calls go through
 * its import slots.  For each allocation kind below the registry
 * (ldshim_memtype_query, looked up in the process) must say what the driver
 * says (cuPointerGetAttribute) at the first, middle and last byte, while the
 * allocation is alive and after it is freed (pools trimmed, graphs
 * destroyed: given back to the driver).  One line per kind.
 * Exit 0: all agree; 1: a disagreement or a failed call; 77: no device. */
#define _GNU_SOURCE
#include "calls.h"
#include "ldshim.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SZ ((size_t)4 << 20)
static int failures, checks;
static __typeof__(ldshim_memtype_query)* query;
static const char* kNames[] = {"unregistered", "host", "pinned", "cuda", "managed"};

/* The driver's answer, in registry terms. */
static int driver_says(uintptr_t p, int* dev) {
    unsigned mt = 0;
    int managed = 0;
    *dev = -1;
    if (cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)p) != CUDA_SUCCESS)
        return LDSHIM_MEM_UNREGISTERED;
    cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, (CUdeviceptr)p);
    cuPointerGetAttribute(dev, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, (CUdeviceptr)p);
    if (managed) return LDSHIM_MEM_CUDA_MANAGED;
    if (mt == CU_MEMORYTYPE_DEVICE) return LDSHIM_MEM_CUDA;
    if (mt == CU_MEMORYTYPE_HOST) return LDSHIM_MEM_HOST_PINNED;
    return LDSHIM_MEM_UNREGISTERED;
}

/* Registry against driver at three bytes of [p, p+n); returns the driver's
 * type at p for the kind's line. */
static int compare(const char* what, const char* phase, const void* p, size_t n, int* reg_type) {
    size_t offs[3] = {0, n / 2, n - 1};
    int first = -1;
    for (int i = 0; i < 3; ++i) {
        uintptr_t a = (uintptr_t)p + offs[i];
        int dev;
        int want = driver_says(a, &dev);
        ldshim_meminfo_t info;
        query((const void*)a, 1, &info);
        checks++;
        int dev_matters = want == LDSHIM_MEM_CUDA || want == LDSHIM_MEM_CUDA_MANAGED;
        if ((int)info.type != want || (dev_matters && info.device != dev)) {
            CUdeviceptr b = 0;
            size_t s = 0;
            cuMemGetAddressRange(&b, &s, (CUdeviceptr)a);
            printf("MISMATCH %s %s %#lx (+%zu): driver %s dev %d [%#llx +%zu], registry %s dev %d [%p +%zu]\n", what,
                   phase, (unsigned long)a, offs[i], kNames[want], dev, (unsigned long long)b, s, kNames[info.type],
                   info.device, info.base, info.length);
            failures++;
        }
        if (i == 0) {
            first = want;
            *reg_type = info.type;
        }
    }
    return first;
}

/* One kind: ALIVE compared now; the caller frees, then calls freed(). */
static struct {
    const char *what, *alive;
    int alive_reg;
    const void* p;
    size_t n;
} k;
static void alive(const char* what, const void* p, size_t n) {
    k.what = what;
    k.p = p;
    k.n = n;
    if (!p) {
        printf("FAIL %s: no allocation to compare\n", what);
        failures++;
        k.p = NULL;
        return;
    }
    k.alive = kNames[compare(what, "alive", p, n, &k.alive_reg)];
}
static void freed(void) {
    if (!k.p) return;
    int reg;
    int drv = compare(k.what, "after free", k.p, k.n, &reg);
    printf("%-36s %p +%-8zu alive: driver %s, registry %s; after free: driver %s, registry %s\n", k.what, k.p, k.n,
           k.alive, kNames[k.alive_reg], kNames[drv], kNames[reg]);
}

static size_t vmm_granularity(CUmemAllocationProp* prop) {
    size_t g = 0;
    DOK(cuMemGetAllocationGranularity(&g, prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    return g ? g : (size_t)2 << 20;
}

int main(void) {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        printf("SKIPPED: no usable CUDA device (%s)\n", cudaGetErrorString(cudaGetLastError()));
        return 77;
    }
    query = (__typeof__(query))dlsym(RTLD_DEFAULT, "ldshim_memtype_query");
    unsigned (*active)(void) = (unsigned (*)(void))dlsym(RTLD_DEFAULT, "ldshim_hooks_active");
    if (!query || !active) {
        printf("FAIL: no libldshim in the process (run with LD_PRELOAD=libldshim_preload.so LDSHIM_CUDA_HOOKS=1)\n");
        return 1;
    }
    OK(cudaSetDevice(0));
    OK(cudaFree(0)); /* the primary context, current on this thread for the driver calls */
    printf("static cudart %d, hook paths %#x\n", CUDART_VERSION, active());
    cudaStream_t s;
    OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaMemPool_t def;
    OK(cudaDeviceGetDefaultMemPool(&def, 0));
    void* p = NULL;

    /* The static runtime's plain kinds, as a baseline. */
    OK(cudaMalloc(&p, SZ));
    alive("cudaMalloc", p, SZ);
    OK(cudaFree(p));
    freed();
    p = NULL;
    OK(cudaMallocManaged(&p, SZ, cudaMemAttachGlobal));
    alive("cudaMallocManaged", p, SZ);
    OK(cudaFree(p));
    freed();
    p = NULL;
    OK(cudaMallocHost(&p, SZ));
    alive("cudaMallocHost", p, SZ);
    OK(cudaFreeHost(p));
    freed();

    /* cudaMallocAsync on the per-thread default stream. */
    p = NULL;
    OK(cudaMallocAsync(&p, SZ, cudaStreamPerThread));
    OK(cudaStreamSynchronize(cudaStreamPerThread));
    alive("cudaMallocAsync (per-thread stream)", p, SZ);
    OK(cudaFreeAsync(p, cudaStreamPerThread));
    OK(cudaStreamSynchronize(cudaStreamPerThread));
    OK(cudaMemPoolTrimTo(def, 0));
    freed();

    /* A pool of its own. */
    struct cudaMemPoolProps pp;
    memset(&pp, 0, sizeof pp);
    pp.allocType = cudaMemAllocationTypePinned;
    pp.location.type = cudaMemLocationTypeDevice;
    pp.location.id = 0;
    cudaMemPool_t pool = NULL;
    OK(cudaMemPoolCreate(&pool, &pp));
    p = NULL;
    if (pool) OK(cudaMallocFromPoolAsync(&p, SZ, pool, s));
    OK(cudaStreamSynchronize(s));
    alive("cudaMallocFromPoolAsync (own pool)", p, SZ);
    if (p) OK(cudaFreeAsync(p, s));
    OK(cudaStreamSynchronize(s));
    if (pool) {
        OK(cudaMemPoolTrimTo(pool, 0));
        OK(cudaMemPoolDestroy(pool));
    }
    freed();

    /* A graph memory node, compared after the graph was launched. */
    cudaGraph_t g = NULL;
    cudaGraphExec_t ge = NULL;
    cudaGraphNode_t node;
    struct cudaMemAllocNodeParams ap;
    memset(&ap, 0, sizeof ap);
    ap.poolProps.allocType = cudaMemAllocationTypePinned;
    ap.poolProps.location.type = cudaMemLocationTypeDevice;
    ap.poolProps.location.id = 0;
    ap.bytesize = SZ;
    OK(cudaGraphCreate(&g, 0));
    OK(cudaGraphAddMemAllocNode(&node, g, NULL, 0, &ap));
    OK(cudaGraphInstantiate(&ge, g, 0));
    if (ge) OK(cudaGraphLaunch(ge, s));
    OK(cudaStreamSynchronize(s));
    alive("graph memory node (after launch)", ap.dptr, SZ);
    if (ap.dptr) OK(cudaFreeAsync(ap.dptr, s));
    OK(cudaStreamSynchronize(s));
    if (ge) OK(cudaGraphExecDestroy(ge));
    if (g) OK(cudaGraphDestroy(g));
    OK(cudaDeviceGraphMemTrim(0));
    freed();

    /* A VMM handle exported as a file descriptor, imported, mapped. */
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    size_t vn = vmm_granularity(&prop);
    vn = (SZ + vn - 1) / vn * vn;
    CUmemGenericAllocationHandle h = 0, h2 = 0;
    CUdeviceptr va = 0;
    int fd = -1;
    DOK(cuMemCreate(&h, vn, &prop, 0));
    DOK(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    DOK(cuMemImportFromShareableHandle(&h2, (void*)(uintptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    DOK(cuMemAddressReserve(&va, vn, 0, 0, 0));
    DOK(cuMemMap(va, vn, 0, h2, 0));
    CUmemAccessDesc acc = {{CU_MEM_LOCATION_TYPE_DEVICE, 0}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    DOK(cuMemSetAccess(va, vn, &acc, 1));
    alive("VMM exported, imported, mapped", (void*)va, vn);
    DOK(cuMemUnmap(va, vn));
    DOK(cuMemRelease(h2));
    DOK(cuMemRelease(h));
    DOK(cuMemAddressFree(va, vn));
    if (fd >= 0) close(fd);
    freed();

    /* The driver's host kinds. */
    p = NULL;
    DOK(cuMemAllocHost(&p, SZ));
    alive("cuMemAllocHost", p, SZ);
    DOK(cuMemFreeHost(p));
    freed();
    p = NULL;
    DOK(cuMemHostAlloc(&p, SZ, CU_MEMHOSTALLOC_PORTABLE));
    alive("cuMemHostAlloc", p, SZ);
    DOK(cuMemFreeHost(p));
    freed();
    void* reg = aligned_alloc(4096, SZ);
    memset(reg, 1, SZ);
    DOK(cuMemHostRegister(reg, SZ, 0));
    alive("cuMemHostRegister", reg, SZ);
    DOK(cuMemHostUnregister(reg));
    freed();
    free(reg);

    /* The driver's device kinds. */
    CUdeviceptr d = 0;
    size_t pitch = 0;
    DOK(cuMemAllocPitch(&d, &pitch, 1000, 100, 4));
    alive("cuMemAllocPitch", (void*)d, pitch * 100);
    DOK(cuMemFree(d));
    freed();
    d = 0;
    DOK(cuMemAllocAsync(&d, SZ, (CUstream)s));
    OK(cudaStreamSynchronize(s));
    alive("cuMemAllocAsync", (void*)d, SZ);
    DOK(cuMemFreeAsync(d, (CUstream)s));
    OK(cudaStreamSynchronize(s));
    OK(cudaMemPoolTrimTo(def, 0));
    freed();

    OK(cudaStreamDestroy(s));
    printf("static_kinds: %d comparisons, failures %d\n", checks, failures);
    return failures ? 1 : 0;
}
