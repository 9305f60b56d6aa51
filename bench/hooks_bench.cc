// What a hook adds to a call: the same call through the program's own PLT
// slot, first unhooked, then with ldshim's hook in the slot (guard, one
// atomic load, the call, the result check), then an allocation and free that
// succeed, whose hooks also update the registry.  Run in registration order:
// the first two benchmarks run before the hooks are installed.
#include "ldshim.h"

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>

extern "C" int cudaMalloc(void** p, size_t n);
extern "C" int cudaFree(void* p);

namespace {

void install() {
    static bool done = [] {
        if (ldshim_hooks_install(LDSHIM_HOOK_CUDA) != LDSHIM_OK) {
            std::fprintf(stderr, "hooks_bench: ldshim_hooks_install failed\n");
            std::exit(1);
        }
        return true;
    }();
    (void)done;
}

void BM_failing_call_unhooked(benchmark::State& state) {
    void* p = nullptr;
    for (auto _ : state) benchmark::DoNotOptimize(cudaMalloc(&p, 0));
}
void BM_alloc_free_unhooked(benchmark::State& state) {
    void* p = nullptr;
    for (auto _ : state) {
        benchmark::DoNotOptimize(cudaMalloc(&p, 4096));
        benchmark::DoNotOptimize(cudaFree(p));
    }
}
void BM_failing_call_hooked(benchmark::State& state) {
    install();
    void* p = nullptr;
    for (auto _ : state) benchmark::DoNotOptimize(cudaMalloc(&p, 0));
}
void BM_alloc_free_hooked(benchmark::State& state) {
    install();
    void* p = nullptr;
    for (auto _ : state) {
        benchmark::DoNotOptimize(cudaMalloc(&p, 4096));
        benchmark::DoNotOptimize(cudaFree(p));
    }
    ldshim_meminfo_t info;
    cudaMalloc(&p, 4096);
    if (ldshim_memtype_query(p, 1, &info) != LDSHIM_OK || info.type != LDSHIM_MEM_CUDA)
        state.SkipWithError("the hook did not register the allocation");
    cudaFree(p);
}

}  // namespace

BENCHMARK(BM_failing_call_unhooked);
BENCHMARK(BM_alloc_free_unhooked);
BENCHMARK(BM_failing_call_hooked);
BENCHMARK(BM_alloc_free_hooked);
BENCHMARK_MAIN();
