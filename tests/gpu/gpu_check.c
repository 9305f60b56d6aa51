/* On a machine with an NVIDIA GPU: installs ldshim's CUDA hooks, allocates
 * every kind of memory through the real runtime and driver, then compares the
 * registry with cudaPointerGetAttributes for random pointers in and around
 * the allocations and in plain host memory, and times both.  Frees
 * everything and checks the registry forgot it.  Exit 0: all agree; 1: a
 * disagreement (printed); 77: no usable GPU. */
#define _GNU_SOURCE
#include "calls.h"
#include "ldshim.h"

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX 64
static struct {
    void* p;
    size_t n;
    const char* what;
    ldshim_memtype_t want;
} g[MAX];
static int ng, failures;

static void add(void* p, size_t n, const char* what, ldshim_memtype_t want) {
    if (ng < MAX) {
        g[ng].p = p;
        g[ng].n = n;
        g[ng].what = what;
        g[ng].want = want;
        ng++;
    }
}
static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

/* What cudaPointerGetAttributes says, in registry terms. */
static ldshim_memtype_t cuda_says(const void* p, int* device) {
    struct cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        cudaGetLastError();
        return LDSHIM_MEM_UNREGISTERED;
    }
    *device = a.device;
    switch (a.type) {
        case cudaMemoryTypeDevice: return LDSHIM_MEM_CUDA;
        case cudaMemoryTypeManaged: return LDSHIM_MEM_CUDA_MANAGED;
        case cudaMemoryTypeHost: return LDSHIM_MEM_HOST_PINNED;
        default: return LDSHIM_MEM_UNREGISTERED;
    }
}

int main(void) {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        printf("SKIPPED: no usable CUDA device (%s)\n", cudaGetErrorString(cudaGetLastError()));
        return 77;
    }
    int rc = ldshim_hooks_install(LDSHIM_HOOK_CUDA);
    if (rc != LDSHIM_OK) {
        printf("FAIL install: %s\n", ldshim_strerror(rc));
        return 1;
    }
    printf("paths %#x\n", ldshim_hooks_active());
    void* p;
    size_t pitch;
    OK(cudaMalloc(&p, 1 << 20));
    add(p, 1 << 20, "cudaMalloc", LDSHIM_MEM_CUDA);
    OK(cudaMallocManaged(&p, 1 << 20, cudaMemAttachGlobal));
    add(p, 1 << 20, "cudaMallocManaged", LDSHIM_MEM_CUDA_MANAGED);
    OK(cudaMallocHost(&p, 1 << 16));
    add(p, 1 << 16, "cudaMallocHost", LDSHIM_MEM_HOST_PINNED);
    OK(cudaHostAlloc(&p, 1 << 16, cudaHostAllocDefault));
    add(p, 1 << 16, "cudaHostAlloc", LDSHIM_MEM_HOST_PINNED);
    void* reg = aligned_alloc(4096, 1 << 16);
    OK(cudaHostRegister(reg, 1 << 16, cudaHostRegisterDefault));
    add(reg, 1 << 16, "cudaHostRegister", LDSHIM_MEM_HOST_PINNED);
    OK(cudaMallocPitch(&p, &pitch, 1000, 10));
    add(p, pitch * 10, "cudaMallocPitch", LDSHIM_MEM_CUDA);
    struct cudaPitchedPtr pp;
    struct cudaExtent ext = {100, 4, 4};
    OK(cudaMalloc3D(&pp, ext));
    add(pp.ptr, pp.pitch * 16, "cudaMalloc3D", LDSHIM_MEM_CUDA);
    cudaStream_t s;
    OK(cudaStreamCreate(&s));
    OK(cudaMallocAsync(&p, 1 << 20, s));
    add(p, 1 << 20, "cudaMallocAsync", LDSHIM_MEM_CUDA);
    cudaMemPool_t pool;
    OK(cudaDeviceGetDefaultMemPool(&pool, 0));
    OK(cudaMallocFromPoolAsync(&p, 1 << 20, pool, s));
    add(p, 1 << 20, "cudaMallocFromPoolAsync", LDSHIM_MEM_CUDA);
    OK(cudaStreamSynchronize(s));
    /* The driver, reached the way a statically linked cudart reaches it. */
    CUresult (*mem_alloc)(CUdeviceptr*, size_t) = NULL;
    enum cudaDriverEntryPointQueryResult q;
    OK(cudaGetDriverEntryPointByVersion("cuMemAlloc", (void**)&mem_alloc, 13000, cudaEnableDefault, &q));
    CUdeviceptr d = 0;
    if (mem_alloc) {
        DOK(mem_alloc(&d, 1 << 20));
        add((void*)d, 1 << 20, "cuMemAlloc via entry point", LDSHIM_MEM_CUDA);
    }
    DOK(cuMemAllocManaged(&d, 1 << 20, CU_MEM_ATTACH_GLOBAL));
    add((void*)d, 1 << 20, "cuMemAllocManaged", LDSHIM_MEM_CUDA_MANAGED);
    /* VMM: reserve, create, map. */
    CUmemAllocationProp prop = {0};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    size_t gran = 0;
    DOK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CUdeviceptr va = 0;
    CUmemGenericAllocationHandle h = 0;
    DOK(cuMemAddressReserve(&va, gran, 0, 0, 0));
    DOK(cuMemCreate(&h, gran, &prop, 0));
    DOK(cuMemMap(va, gran, 0, h, 0));
    CUmemAccessDesc acc = {{CU_MEM_LOCATION_TYPE_DEVICE, 0}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    DOK(cuMemSetAccess(va, gran, &acc, 1));
    add((void*)va, gran, "cuMemMap", LDSHIM_MEM_CUDA);

    /* Every allocation is registered exactly. */
    for (int i = 0; i < ng; ++i) {
        ldshim_meminfo_t info;
        ldshim_memtype_query(g[i].p, 1, &info);
        if (info.type != g[i].want || info.base != g[i].p || info.length != g[i].n) {
            printf("FAIL %s: registry says type %d base %p length %zu, want type %d %p %zu\n", g[i].what, info.type,
                   info.base, info.length, g[i].want, g[i].p, g[i].n);
            failures++;
        }
    }
    /* Random pointers: registry vs driver, and the time of each. */
    enum { N = 100000 };
    static const void* probe[N];
    void* host = malloc(1 << 20);
    srand(1);
    for (int i = 0; i < N; ++i) {
        int k = rand() % (ng + 1);
        const char* b = k == ng ? (const char*)host : (const char*)g[k].p;
        size_t n = k == ng ? (1 << 20) : g[k].n;
        /* Inside allocations only: past its end the driver answers for the
         * whole granule it reserved, the registry for the bytes asked for. */
        probe[i] = b + (size_t)rand() % n;
    }
    int mismatches = 0;
    for (int i = 0; i < N; ++i) {
        int dev = -1;
        ldshim_memtype_t want = cuda_says(probe[i], &dev);
        ldshim_meminfo_t info;
        ldshim_memtype_query(probe[i], 1, &info);
        ldshim_memtype_t got = info.type;
        if (got != want || (want != LDSHIM_MEM_UNREGISTERED && want != LDSHIM_MEM_HOST_PINNED && info.device != dev)) {
            if (mismatches++ < 10) printf("MISMATCH %p: registry %d, driver %d\n", probe[i], got, want);
        }
    }
    double t0 = now_ns();
    volatile int sink = 0;
    for (int i = 0; i < N; ++i) {
        ldshim_meminfo_t info;
        ldshim_memtype_query(probe[i], 1, &info);
        sink += info.type;
    }
    double t1 = now_ns();
    for (int i = 0; i < N; ++i) {
        int dev;
        sink += cuda_says(probe[i], &dev);
    }
    double t2 = now_ns();
    printf("random pointers %d, mismatches %d\n", N, mismatches);
    printf("registry %.1f ns/lookup, cudaPointerGetAttributes %.1f ns/lookup, ratio %.1fx\n", (t1 - t0) / N,
           (t2 - t1) / N, (t2 - t1) / (t1 - t0));
    if (mismatches) failures++;

    /* Free everything; the registry must forget it. */
    DOK(cuMemUnmap(va, gran));
    DOK(cuMemRelease(h));
    DOK(cuMemAddressFree(va, gran));
    for (int i = 0; i < ng; ++i) {
        const char* w = g[i].what;
        if (!strcmp(w, "cuMemMap")) continue;
        if (!strcmp(w, "cudaMallocHost") || !strcmp(w, "cudaHostAlloc"))
            OK(cudaFreeHost(g[i].p));
        else if (!strcmp(w, "cudaHostRegister"))
            OK(cudaHostUnregister(g[i].p));
        else if (!strcmp(w, "cudaMallocAsync") || !strcmp(w, "cudaMallocFromPoolAsync"))
            OK(cudaFreeAsync(g[i].p, s));
        else if (!strncmp(w, "cuMem", 5))
            DOK(cuMemFree((CUdeviceptr)g[i].p));
        else
            OK(cudaFree(g[i].p));
    }
    OK(cudaStreamSynchronize(s));
    for (int i = 0; i < ng; ++i) {
        ldshim_meminfo_t info;
        ldshim_memtype_query(g[i].p, 1, &info);
        if (info.type != LDSHIM_MEM_UNREGISTERED) {
            printf("FAIL %s still registered after free\n", g[i].what);
            failures++;
        }
    }
    printf("%d allocation kinds, failures %d\n", ng, failures);
    return failures ? 1 : 0;
}
