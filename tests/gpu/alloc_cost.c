/* On a machine with an NVIDIA GPU: what ldshim's CUDA hooks add to an
 * allocation and free through the real runtime, in one process: rounds of
 * N pairs with the hooks out and N with them in (installed and removed
 * through the C API between phases, the order alternating), each phase on
 * the same stream, timed to the stream's end.  Prints the median ns per
 * pair of each, what the hooks add and the ratio, for cudaMallocAsync +
 * cudaFreeAsync (the goal: at most +10 %) and cudaMalloc + cudaFree.
 * Exit 0: within the goal; 1: over it or an error (printed); 77: no GPU. */
#define _GNU_SOURCE
#include "ldshim.h"

#include <cuda_runtime_api.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { kRounds = 11, kPairs = 2000 };
static const size_t kBytes = 1 << 20;

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int by_value(const void* a, const void* b) {
    double x = *(const double*)a, y = *(const double*)b;
    return (x > y) - (x < y);
}

/* ns per pair of one phase, or a negative value when a call failed. */
static double phase(int async, cudaStream_t s) {
    double t0 = now_ns();
    for (int i = 0; i < kPairs; ++i) {
        void* p = NULL;
        if (async) {
            if (cudaMallocAsync(&p, kBytes, s) != cudaSuccess || cudaFreeAsync(p, s) != cudaSuccess) return -1;
        } else if (cudaMalloc(&p, kBytes) != cudaSuccess || cudaFree(p) != cudaSuccess) {
            return -1;
        }
    }
    if (cudaStreamSynchronize(s) != cudaSuccess) return -1;
    return (now_ns() - t0) / kPairs;
}

static int set_hooks(int on) {
    ldshim_status rc = on ? ldshim_hooks_install(LDSHIM_HOOK_CUDA) : ldshim_hooks_uninstall();
    if (rc != LDSHIM_OK)
        fprintf(stderr, "alloc_cost: hooks %s: %s\n", on ? "install" : "uninstall", ldshim_strerror(rc));
    return rc == LDSHIM_OK;
}

/* One row: returns the ratio hooked/plain, or a negative value on error. */
static double row(const char* name, int async, cudaStream_t s) {
    double plain[kRounds], hooked[kRounds];
    if (phase(async, s) < 0) return -1; /* warm the pool and the runtime */
    for (int r = 0; r < kRounds; ++r) {
        for (int k = 0; k < 2; ++k) {
            int on = (r + k) % 2;
            if (!set_hooks(on)) return -1;
            double t = phase(async, s);
            if (t < 0) return -1;
            (on ? hooked : plain)[r] = t;
        }
    }
    if (!set_hooks(0)) return -1;
    qsort(plain, kRounds, sizeof plain[0], by_value);
    qsort(hooked, kRounds, sizeof hooked[0], by_value);
    double a = plain[kRounds / 2], b = hooked[kRounds / 2];
    printf("%-32s %10.1f %10.1f %+9.1f %7.3fx\n", name, a, b, b - a, b / a);
    return b / a;
}

int main(void) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        printf("SKIPPED: no usable GPU (cudaGetDeviceCount: %d devices)\n", n);
        return 77;
    }
    cudaStream_t s;
    if (cudaStreamCreate(&s) != cudaSuccess) {
        printf("alloc_cost: cudaStreamCreate failed\n");
        return 1;
    }
    printf("%d rounds of %d pairs of %zu bytes each way, medians of ns per pair\n", kRounds, kPairs, kBytes);
    printf("%-32s %10s %10s %9s %8s\n", "pair", "plain", "hooked", "added", "ratio");
    double async = row("cudaMallocAsync + cudaFreeAsync", 1, s);
    double sync = row("cudaMalloc + cudaFree", 0, s);
    if (async < 0 || sync < 0) {
        printf("alloc_cost: a CUDA call or the hooks failed\n");
        return 1;
    }
    int ok = async <= 1.10;
    printf("alloc_cost: cudaMallocAsync + cudaFreeAsync %.1f %% added (goal: at most 10 %%): %s\n", 100 * (async - 1),
           ok ? "met" : "NOT met");
    return ok ? 0 : 1;
}
