/* ldshim_memtype_classify with and without a CUDA driver.  With
 * LDSHIM_EXPECT_DRIVER=1 the fake libcuda.so.1 must be found (on
 * LD_LIBRARY_PATH); otherwise there must be none. */
#include "ldshim.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int passed, failed;
#define CHECK(c)                                                         \
    do {                                                                 \
        if (c)                                                           \
            passed++;                                                    \
        else {                                                           \
            failed++;                                                    \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #c); \
        }                                                                \
    } while (0)

int main(void) {
    static char device[8192], pinned[4096], heap[4096];
    ldshim_meminfo_t info;
    ldshim_memrule_t rule;
    const char* e = getenv("LDSHIM_EXPECT_DRIVER");
    if (e && *e == '1') {
        /* As a CUDA program would: the driver is loaded and holds allocations. */
        void* cuda = dlopen("libcuda.so.1", RTLD_NOW);
        CHECK(cuda != NULL);
        if (!cuda) return 1;
        void (*reg)(unsigned long long, size_t, unsigned, unsigned, int);
        void* sym = dlsym(cuda, "fake_cuda_register");
        memcpy(&reg, &sym, sizeof reg);                 /* POSIX: dlsym's object pointer to a function pointer */
        reg((uintptr_t)device, sizeof device, 2, 0, 1); /* device memory on GPU 1 */
        reg((uintptr_t)pinned, sizeof pinned, 1, 0, 0); /* pinned host memory */
        CHECK(ldshim_memtype_classify(device + 100, 8, &info, &rule) == LDSHIM_OK);
        CHECK(info.type == LDSHIM_MEM_CUDA && info.device == 1 && rule == LDSHIM_MEMRULE_DRIVER);
        CHECK(info.base == device && info.length == sizeof device);
        /* The whole allocation is now registered: no driver call. */
        CHECK(ldshim_memtype_classify(device + 5000, 8, &info, &rule) == LDSHIM_OK);
        CHECK(info.type == LDSHIM_MEM_CUDA && rule == LDSHIM_MEMRULE_REGISTRY);
        CHECK(ldshim_memtype_query(device, 1, &info) == LDSHIM_OK && info.type == LDSHIM_MEM_CUDA);
        CHECK(ldshim_memtype_classify(pinned, 1, &info, &rule) == LDSHIM_OK);
        CHECK(info.type == LDSHIM_MEM_HOST_PINNED && rule == LDSHIM_MEMRULE_DRIVER);
    }
    /* Unknown to the registry and to the driver (or no driver): host. */
    CHECK(ldshim_memtype_classify(heap, 16, &info, &rule) == LDSHIM_OK);
    CHECK(info.type == LDSHIM_MEM_HOST && rule == LDSHIM_MEMRULE_DEFAULT_HOST);
    /* ... while the registry itself still says it never saw it. */
    CHECK(ldshim_memtype_query(heap, 16, &info) == LDSHIM_OK && info.type == LDSHIM_MEM_UNREGISTERED);
    CHECK(ldshim_memtype_classify(heap, 16, NULL, NULL) == LDSHIM_ERR_INVALID_ARGUMENT);
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
