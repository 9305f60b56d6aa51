/* A stand-in libcuda.so.1 for the registry's driver fallback: the two
 * driver calls it uses, answered from a table that the test fills through
 * fake_cuda_register().  Error codes and attribute numbers are cuda.h's. */
#include <stddef.h>

typedef unsigned long long CUdeviceptr;
static struct {
    CUdeviceptr base;
    size_t size;
    unsigned type, managed;
    int ordinal;
} g[16];
static int n;

void fake_cuda_register(CUdeviceptr base, size_t size, unsigned type, unsigned managed, int ordinal) {
    if (n < 16) {
        g[n].base = base;
        g[n].size = size;
        g[n].type = type;
        g[n].managed = managed;
        g[n].ordinal = ordinal;
        n++;
    }
}

static int find(CUdeviceptr p) {
    for (int i = 0; i < n; ++i)
        if (p >= g[i].base && p - g[i].base < g[i].size) return i;
    return -1;
}

int cuPointerGetAttributes(unsigned count, unsigned* attrs, void** data, CUdeviceptr p) {
    int i = find(p);
    if (i < 0) return 1; /* CUDA_ERROR_INVALID_VALUE: not driver memory */
    for (unsigned k = 0; k < count; ++k) {
        if (attrs[k] == 2) *(unsigned*)data[k] = g[i].type;    /* MEMORY_TYPE */
        if (attrs[k] == 8) *(unsigned*)data[k] = g[i].managed; /* IS_MANAGED */
        if (attrs[k] == 9) *(int*)data[k] = g[i].ordinal;      /* DEVICE_ORDINAL */
    }
    return 0;
}

int cuMemGetAddressRange_v2(CUdeviceptr* base, size_t* size, CUdeviceptr p) {
    int i = find(p);
    if (i < 0) return 1;
    *base = g[i].base;
    *size = g[i].size;
    return 0;
}
