/* The GPU checks' call wrappers: a runtime (OK) or driver (DOK) call that
 * fails is printed with its error's name and counted in the including
 * file's `failures`. */
#ifndef LDSHIM_TESTS_GPU_CALLS_H
#define LDSHIM_TESTS_GPU_CALLS_H

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>

#define OK(call)                                                    \
    do {                                                            \
        cudaError_t e_ = (call);                                    \
        if (e_ != cudaSuccess) {                                    \
            printf("FAIL %s: %s\n", #call, cudaGetErrorString(e_)); \
            failures++;                                             \
        }                                                           \
    } while (0)
#define DOK(call)                                        \
    do {                                                 \
        CUresult e_ = (call);                            \
        if (e_ != CUDA_SUCCESS) {                        \
            const char* s_ = "?";                        \
            cuGetErrorName(e_, &s_);                     \
            printf("FAIL %s: %s (%d)\n", #call, s_, e_); \
            failures++;                                  \
        }                                                \
    } while (0)

#endif
