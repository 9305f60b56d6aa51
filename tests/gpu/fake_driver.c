/* A stand-in libcuda.so.1 for tests/gpu/checker_test.sh: the functions
 * tests/gpu/frameworks.py's ctypes part and its checker call, backed by
 * host memory, with cuPointerGetAttribute answering from its own table.
 * FAKE_CUDA_LIE=1 makes it call managed memory plain device memory, so
 * that the checker has a disagreement to report. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

typedef unsigned long long CUdeviceptr;
enum { OK = 0, INVALID_VALUE = 1, OUT_OF_MEMORY = 2 };
enum { DEVICE = 1, MANAGED, HOST };
#define API __attribute__((visibility("default")))

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    uintptr_t base;
    size_t size;
    int kind;
} g[256];

static int track(void* p, size_t n, int kind) {
    int r = OUT_OF_MEMORY;
    pthread_mutex_lock(&mu);
    for (int i = 0; p && i < 256; ++i)
        if (!g[i].size) {
            g[i].base = (uintptr_t)p;
            g[i].size = n;
            g[i].kind = kind;
            r = OK;
            break;
        }
    pthread_mutex_unlock(&mu);
    if (r != OK) free(p);
    return r;
}
/* The entry holding p, or -1; a free (untrack) forgets it. */
static int find(uintptr_t p, int untrack, size_t* size, int* kind) {
    int found = -1;
    pthread_mutex_lock(&mu);
    for (int i = 0; i < 256; ++i)
        if (g[i].size && p >= g[i].base && p - g[i].base < g[i].size && (!untrack || p == g[i].base)) {
            found = i;
            if (size) *size = g[i].size;
            if (kind) *kind = g[i].kind;
            if (untrack) g[i].size = 0;
            break;
        }
    pthread_mutex_unlock(&mu);
    return found;
}
static int alloc(void** p, size_t n, int kind) {
    *p = malloc(n ? n : 1);
    return track(*p, n, kind);
}
static int release(uintptr_t p) {
    if (find(p, 1, NULL, NULL) < 0) return INVALID_VALUE;
    free((void*)p);
    return OK;
}

API int cuInit(unsigned flags) { return flags ? INVALID_VALUE : OK; }
API int cuCtxGetCurrent(void** ctx) {
    *ctx = (void*)&mu;
    return OK;
}
API int cuCtxSetCurrent(void* ctx) { return ctx ? OK : INVALID_VALUE; }
API int cuDevicePrimaryCtxRetain(void** ctx, int dev) { return dev ? INVALID_VALUE : cuCtxGetCurrent(ctx); }
API int cuCtxGetDevice(int* dev) {
    *dev = 0;
    return OK;
}
API int cuMemAlloc_v2(CUdeviceptr* p, size_t n) { return alloc((void**)p, n, DEVICE); }
API int cuMemAllocManaged(CUdeviceptr* p, size_t n, unsigned flags) {
    (void)flags;
    return alloc((void**)p, n, MANAGED);
}
API int cuMemAllocPitch_v2(CUdeviceptr* p, size_t* pitch, size_t width, size_t height, unsigned elem) {
    *pitch = (width * elem + 511) / 512 * 512;
    return alloc((void**)p, *pitch * height, DEVICE);
}
API int cuMemFree_v2(CUdeviceptr p) { return release(p); }
API int cuMemAllocHost_v2(void** p, size_t n) { return alloc(p, n, HOST); }
API int cuMemHostAlloc(void** p, size_t n, unsigned flags) {
    (void)flags;
    return alloc(p, n, HOST);
}
API int cuMemFreeHost(void* p) { return release((uintptr_t)p); }
API int cuPointerGetAttribute(void* data, int attribute, CUdeviceptr p) {
    int kind = 0;
    if (find(p, 0, NULL, &kind) < 0) return INVALID_VALUE;
    const char* lie = getenv("FAKE_CUDA_LIE");
    if (kind == MANAGED && lie && *lie == '1') kind = DEVICE;
    switch (attribute) {
        case 2: *(unsigned*)data = kind == HOST ? 1 : 2; return OK; /* MEMORY_TYPE: HOST, DEVICE */
        case 8: *(int*)data = kind == MANAGED; return OK;           /* IS_MANAGED */
        case 9: *(int*)data = 0; return OK;                         /* DEVICE_ORDINAL */
        default: return INVALID_VALUE;
    }
}
API int cuMemGetAddressRange_v2(CUdeviceptr* base, size_t* size, CUdeviceptr p) {
    int i = find(p, 0, size, NULL);
    if (i < 0) return INVALID_VALUE;
    pthread_mutex_lock(&mu);
    *base = g[i].base;
    pthread_mutex_unlock(&mu);
    return OK;
}
