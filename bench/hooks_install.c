/* Install time in a process with many libraries: dlopens every
 * libbench*.so in DIR (each imports cudaMalloc and cudaFree), then times
 * ldshim_hooks_install + ldshim_hooks_uninstall, ROUNDS times, and prints
 * the median install time and the number of slots written. */
#define _GNU_SOURCE
#include "ldshim.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}
static int cmp(const void* a, const void* b) {
    double x = *(const double*)a, y = *(const double*)b;
    return (x > y) - (x < y);
}

int main(int argc, char** argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s DIR COUNT ROUNDS\n", argv[0]);
        return 2;
    }
    int count = atoi(argv[2]), rounds = atoi(argv[3]);
    for (int i = 0; i < count; ++i) {
        char path[4096];
        snprintf(path, sizeof path, "%s/libbench%d.so", argv[1], i);
        if (!dlopen(path, RTLD_NOW | RTLD_LOCAL)) {
            fprintf(stderr, "%s\n", dlerror());
            return 1;
        }
    }
    double* t = calloc((size_t)rounds, sizeof *t);
    size_t slots = 0;
    for (int r = 0; r < rounds; ++r) {
        size_t before = ldshim_hooks_log_size();
        double t0 = now_ms();
        if (ldshim_hooks_install(LDSHIM_HOOK_CUDA) != 0) return 1;
        t[r] = now_ms() - t0;
        slots = ldshim_hooks_log_size() - before;
        ldshim_hooks_uninstall();
    }
    qsort(t, (size_t)rounds, sizeof *t, cmp);
    printf("libraries %d  slots %zu  install median %.2f ms  min %.2f ms  max %.2f ms  (%d rounds)\n", count, slots,
           t[rounds / 2], t[0], t[rounds - 1], rounds);
    return 0;
}
