// Memory-type lookup latency and reader throughput: ldshim's registry against
// UCX's own memtype cache (Debian's libucs, the real library) and a std::map
// under std::shared_mutex.  One binary, one run:
//   build/bench/memtype_bench
#include "memtype/registry.h"

#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <random>
#include <shared_mutex>
#include <thread>
#include <vector>

#ifdef LDSHIM_HAVE_UCS
#include <ucs/memory/memtype_cache.h>
#endif

using ldshim::memtype::Registry;
using ldshim::memtype::Type;

namespace {

// N allocation-like ranges: page-aligned, sizes log-uniform from 4 KiB to
// 4 MiB, separated by random gaps of 4 to 64 KiB (so that UCX, which merges
// adjacent ranges of one type, keeps them apart).  Random pointers fall
// inside random ranges.  Nothing is dereferenced.
constexpr std::uintptr_t kBase = 0x7f0000000000ULL;
constexpr std::size_t kPtrs = 1 << 16;

struct Range {
    std::uintptr_t base;
    std::size_t len;
};

const std::vector<Range>& layout(std::size_t n) {
    static std::map<std::size_t, std::vector<Range>> cache;
    auto& v = cache[n];
    if (v.empty()) {
        std::mt19937_64 rng(42);
        std::uintptr_t at = kBase;
        for (std::size_t i = 0; i < n; ++i) {
            std::size_t len = std::size_t{4096} << (rng() % 11);  // 4 KiB .. 4 MiB
            v.push_back({at, len});
            at += len + 4096 * (1 + rng() % 16);
        }
    }
    return v;
}

std::vector<std::uintptr_t> random_pointers(std::size_t n, std::uint32_t seed = 1) {
    const auto& rs = layout(n);
    std::mt19937_64 rng(seed);
    std::vector<std::uintptr_t> v(kPtrs);
    for (auto& p : v) {
        const Range& r = rs[rng() % n];
        p = r.base + rng() % r.len;
    }
    return v;
}

void BM_lookup_ldshim(benchmark::State& st) {
    auto n = static_cast<std::size_t>(st.range(0));
    Registry r;
    for (const auto& rg : layout(n)) r.insert(rg.base, rg.len, Type::cuda, 0);
    auto ptrs = random_pointers(n);
    std::size_t k = 0;
    for (auto _ : st) {
        auto info = r.lookup(ptrs[k++ & (kPtrs - 1)]);
        benchmark::DoNotOptimize(info);
    }
    st.counters["bytes_per_range"] = double(r.memory_bytes()) / double(n);
}
BENCHMARK(BM_lookup_ldshim)->Name("lookup/ldshim")->Arg(10)->Arg(1000)->Arg(100000);

struct MapRegistry {
    struct E {
        std::uintptr_t last;
        int type;
    };
    std::map<std::uintptr_t, E> m;
    mutable std::shared_mutex mu;
    int lookup(std::uintptr_t p) const {
        std::shared_lock lock(mu);
        auto it = m.upper_bound(p);
        if (it == m.begin()) return 0;
        --it;
        return p <= it->second.last ? it->second.type : 0;
    }
};

void BM_lookup_map(benchmark::State& st) {
    auto n = static_cast<std::size_t>(st.range(0));
    MapRegistry r;
    for (const auto& rg : layout(n)) r.m[rg.base] = {rg.base + rg.len - 1, 3};
    auto ptrs = random_pointers(n);
    std::size_t k = 0;
    for (auto _ : st) benchmark::DoNotOptimize(r.lookup(ptrs[k++ & (kPtrs - 1)]));
}
BENCHMARK(BM_lookup_map)->Name("lookup/map")->Arg(10)->Arg(1000)->Arg(100000);

#ifdef LDSHIM_HAVE_UCS
void BM_lookup_ucx(benchmark::State& st) {
    auto n = static_cast<std::size_t>(st.range(0));
    ucs_memory_info_t mi;
    ucs_memtype_cache_lookup(reinterpret_cast<void*>(kBase), 1, &mi);  // creates the global cache
    for (const auto& rg : layout(n))
        ucs_memtype_cache_update(reinterpret_cast<void*>(rg.base), rg.len, UCS_MEMORY_TYPE_CUDA,
                                 UCS_SYS_DEVICE_ID_UNKNOWN);
    if (ucs_memtype_cache_lookup(reinterpret_cast<void*>(kBase + 1), 1, &mi) != UCS_OK) {
        st.SkipWithError("UCX memtype cache unavailable (UCX_MEMTYPE_CACHE=n?)");
        return;
    }
    auto ptrs = random_pointers(n);
    std::size_t k = 0;
    for (auto _ : st) {
        ucs_status_t s = ucs_memtype_cache_lookup(reinterpret_cast<void*>(ptrs[k++ & (kPtrs - 1)]), 1, &mi);
        benchmark::DoNotOptimize(s);
        benchmark::DoNotOptimize(mi);
    }
    const auto& last = layout(n).back();
    ucs_memtype_cache_remove(reinterpret_cast<void*>(kBase), last.base + last.len - kBase);
}
BENCHMARK(BM_lookup_ucx)->Name("lookup/ucx")->Arg(10)->Arg(1000)->Arg(100000);
#endif

// Reader throughput over 1,000 ranges: no writer (0), a writer removing and
// re-inserting random ranges as fast as it can (1, the worst case), and one
// doing it at 100,000 updates per second (2, far above allocation rates).
Registry* g_shared = nullptr;
std::atomic<bool> g_stop{false};
std::thread g_writer;
std::atomic<std::uint64_t> g_writes{0};

void BM_readers(benchmark::State& st) {
    constexpr std::size_t n = 1000;
    const bool with_writer = st.range(0) != 0;
    const bool paced = st.range(0) == 2;
    if (st.thread_index() == 0) {
        g_shared = new Registry();
        for (const auto& rg : layout(n)) g_shared->insert(rg.base, rg.len, Type::cuda, 0);
        g_stop = false;
        g_writes = 0;
        if (with_writer)
            g_writer = std::thread([paced] {
                std::mt19937_64 rng(99);
                const auto& rs = layout(n);
                auto next = std::chrono::steady_clock::now();
                while (!g_stop.load(std::memory_order_relaxed)) {
                    if (paced) {  // two updates every 20 us
                        next += std::chrono::microseconds(20);
                        while (std::chrono::steady_clock::now() < next && !g_stop.load(std::memory_order_relaxed)) {
                        }
                    }
                    const Range& rg = rs[rng() % n];
                    g_shared->remove(rg.base, rg.len);
                    g_shared->insert(rg.base, rg.len, Type::cuda, 1);
                    g_writes.fetch_add(2, std::memory_order_relaxed);
                }
            });
    }
    auto ptrs = random_pointers(n, 7 + static_cast<std::uint32_t>(st.thread_index()));
    std::size_t k = 0;
    for (auto _ : st) {
        auto info = g_shared->lookup(ptrs[k++ & (kPtrs - 1)]);
        benchmark::DoNotOptimize(info);
    }
    st.SetItemsProcessed(st.iterations());
    if (st.thread_index() == 0) {
        g_stop = true;
        if (g_writer.joinable()) g_writer.join();
        st.counters["writer_ops"] = benchmark::Counter(double(g_writes.load()), benchmark::Counter::kIsRate);
    }
}
BENCHMARK(BM_readers)->Name("readers/writer")->Arg(0)->Arg(1)->Arg(2)->Threads(1)->Threads(2)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
