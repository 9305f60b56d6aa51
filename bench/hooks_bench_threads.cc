// hooks_bench's thread rows: N threads allocate and free (cudaMalloc +
// cudaFree) against the stand-in alone and through ldshim's hooks, in
// alternating phases, while one more thread queries the registry; what the
// hooks cost the allocators' throughput, and what the hooks' writes cost a
// reader's latency.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <thread>
#include <vector>

#include "hooks_bench.h"
#include "ldshim.h"

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace hooks_bench {
namespace {

constexpr int kLivePerThread = 64;  // each thread's allocations between its frees
constexpr int kLookupBatch = 32;
constexpr int kResident = 1000;  // ranges registered for the lookups, 64 KiB apart
constexpr std::uintptr_t kResidentBase = 0x28000000;
constexpr std::size_t kRangeSize = 4096;
constexpr std::size_t kMaxSamples = 1 << 20;

using AllocFn = int (*)(void**, std::size_t);
using FreeFn = int (*)(void*);

#if defined(__x86_64__)
constexpr const char* kTickName = "rdtsc";
#else
constexpr const char* kTickName = "steady_clock";
#endif

std::uint64_t ticks() {
#if defined(__x86_64__)
    return __rdtsc();
#else
    return static_cast<std::uint64_t>(now_ns());
#endif
}

// Nanoseconds per tick, against steady_clock over `ms`.
double calibrate(int ms) {
    double n0 = now_ns();
    std::uint64_t t0 = ticks();
    while (now_ns() - n0 < ms * 1e6) {
    }
    return (now_ns() - n0) / static_cast<double>(ticks() - t0);
}

struct Phase {
    std::atomic<bool> go{false}, stop{false};
    std::atomic<int> running{0};         // threads past `go`: the phase's clock starts when all are
    std::vector<std::uint32_t> lookups;  // ticks per batch of kLookupBatch
};

// Queries pointers inside the resident ranges, in timed batches, from `go`
// until `stop`.
void look_up(Phase& ph, unsigned seed) {
    ph.go.wait(false);
    ph.running.fetch_add(1);
    std::uint32_t x = seed | 1;
    unsigned sink = 0;
    const void* ptrs[kLookupBatch];
    while (!ph.stop.load(std::memory_order_relaxed)) {
        for (auto& p : ptrs) {
            x ^= x << 13, x ^= x >> 17, x ^= x << 5;
            p = reinterpret_cast<const void*>(kResidentBase + (std::uintptr_t(x % kResident) << 16) +
                                              (x >> 20) % kRangeSize);
        }
        std::uint64_t t0 = ticks();
        for (const void* p : ptrs) {
            ldshim_meminfo_t info;
            ldshim_memtype_query(p, 1, &info);
            sink += info.type;
        }
        std::uint64_t t1 = ticks();
        if (ph.lookups.size() < kMaxSamples) ph.lookups.push_back(static_cast<std::uint32_t>(t1 - t0));
    }
    if (sink == 1u << 31) std::printf("%u\n", sink);  // keeps the queries
}

struct Count {
    double start = 0, end = 0, cpu = 0;  // cpu: the thread's own CPU time, ns
    long pairs = 0;
};

double thread_cpu_ns() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

// Allocates and frees, kLivePerThread at a time, from `go` until `stop`.
void allocate(Phase& ph, Fn a, Fn f, Count& c) {
    ph.go.wait(false);
    ph.running.fetch_add(1);
    void* p[kLivePerThread];
    c.start = now_ns();
    double cpu0 = thread_cpu_ns();
    while (!ph.stop.load(std::memory_order_relaxed)) {
        for (auto& q : p) reinterpret_cast<AllocFn>(a)(&q, kRangeSize);
        for (void* q : p) reinterpret_cast<FreeFn>(f)(q);
        c.pairs += kLivePerThread;
    }
    c.cpu = thread_cpu_ns() - cpu0;
    c.end = now_ns();
}

struct Rate {
    double mpairs = 0;    // million pairs per second, over the span from the first start to the last end
    double cpu_pair = 0;  // the allocating threads' CPU time per pair, ns
};

// One phase of `ms` milliseconds: `threads` allocating threads (or none)
// and the lookup thread; appends the lookup batches to `samples` (null: no
// lookup thread).
Rate phase(int threads, Fn a, Fn f, int ms, std::vector<std::uint32_t>* samples) {
    Phase ph;
    ph.lookups.reserve(1 << 16);
    std::vector<Count> counts(threads);
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t) ts.emplace_back(allocate, std::ref(ph), a, f, std::ref(counts[t]));
    std::thread lookup;
    if (samples) lookup = std::thread(look_up, std::ref(ph), 0x9e3779b9u + static_cast<unsigned>(samples->size()));
    ph.go = true;
    ph.go.notify_all();
    while (ph.running.load() < threads + (samples ? 1 : 0)) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    ph.stop = true;
    for (auto& t : ts) t.join();
    if (samples) {
        lookup.join();
        samples->insert(samples->end(), ph.lookups.begin(), ph.lookups.end());
    }
    if (threads == 0) return {};
    double start = counts[0].start, end = counts[0].end, cpu = 0;
    long pairs = 0;
    for (const Count& c : counts) {
        start = std::min(start, c.start), end = std::max(end, c.end);
        cpu += c.cpu, pairs += c.pairs;
    }
    return {1e3 * static_cast<double>(pairs) / (end - start), cpu / static_cast<double>(pairs)};
}

// "p50 p99" in ns per lookup.
std::pair<double, double> percentiles(std::vector<std::uint32_t> v, double ns_per_tick) {
    if (v.empty()) return {0, 0};
    std::sort(v.begin(), v.end());
    auto at = [&](double q) { return v[static_cast<std::size_t>(q * (v.size() - 1))] * ns_per_tick / kLookupBatch; };
    return {at(0.50), at(0.99)};
}

struct Row {
    std::vector<double> direct, hooked, ratio, cpu_direct, cpu_hooked;
    std::vector<double> alone, cpu_alone;  // hooked, with no lookup thread
    std::vector<std::uint32_t> no_writer, writers;
};

void print_rows(const Row* rows, const int* nthreads, int rounds, int ms, double ns_per_tick,
                const std::vector<std::uint32_t>& alone) {
    std::printf(
        "\nthreads: cudaMalloc + cudaFree, %d live per thread, in phases of %d ms against the stand-in (direct) and "
        "through ldshim's hooks (the order alternating), %d rounds, medians: pairs per second of wall time from the "
        "first thread's start to the last one's end, and the allocating threads' CPU time per pair; one more thread "
        "runs ldshim_memtype_query on %d ranges registered for it, throughout, in batches of %d timed with %s: "
        "ns per lookup (a batch's time / %d), p50 and p99 over every batch of every round\n",
        kLivePerThread, ms, rounds, kResident, kLookupBatch, kTickName, kLookupBatch);
    std::printf("%-7s | %-30s | %-26s | %-17s | %s\n", "threads", "Mpairs/s: direct  hooked ratio",
                "CPU ns/pair: direct hooked", "lookups, no writer", "hooked writers");
    std::printf("%-7s | %-30s | %-26s | %-17s | %s\n", "", "", "", "     p50     p99", "     p50     p99");
    for (int c = 0; c < 3; ++c) {
        const Row& row = rows[c];
        auto [n50, n99] = percentiles(row.no_writer, ns_per_tick);
        auto [w50, w99] = percentiles(row.writers, ns_per_tick);
        std::printf("%-7d | %14.2f %7.2f %6.3fx | %19.1f %6.1f | %8.1f %8.1f | %8.1f %8.1f\n", nthreads[c],
                    median(row.direct), median(row.hooked), median(row.ratio), median(row.cpu_direct),
                    median(row.cpu_hooked), n50, n99, w50, w99);
    }
    auto [a50, a99] = percentiles(alone, ns_per_tick);
    std::printf("lookups with no other thread: p50 %.1f ns, p99 %.1f ns\n", a50, a99);
    std::printf("the hooked phases again with no lookup thread:");
    for (int c = 0; c < 3; ++c)
        std::printf("%s %d: %.2f Mpairs/s, CPU %.1f ns/pair", c ? ";" : "", nthreads[c], median(rows[c].alone),
                    median(rows[c].cpu_alone));
    std::printf("\n");
}

}  // namespace

void thread_rows(Fn direct_alloc, Fn direct_free, Fn hooked_alloc, Fn hooked_free, int rounds, bool quick) {
    for (int i = 0; i < kResident; ++i)
        ldshim_memtype_insert(reinterpret_cast<void*>(kResidentBase + (std::uintptr_t(i) << 16)), kRangeSize,
                              LDSHIM_MEM_CUDA, 0);
    const int ms = quick ? 2 : 20;
    const double ns_per_tick = calibrate(quick ? 5 : 50);
    const int nthreads[] = {1, 2, 4};  // 1: what the threads scale from
    Row rows[3];
    std::vector<std::uint32_t> alone;
    for (int r = 0; r < rounds; ++r) {
        phase(0, nullptr, nullptr, ms / 2, &alone);
        for (int c = 0; c < 3; ++c) {
            Row& row = rows[c];
            Rate d, h;
            if (r % 2) d = phase(nthreads[c], direct_alloc, direct_free, ms, &row.no_writer);
            h = phase(nthreads[c], hooked_alloc, hooked_free, ms, &row.writers);
            if (!(r % 2)) d = phase(nthreads[c], direct_alloc, direct_free, ms, &row.no_writer);
            Rate u = phase(nthreads[c], hooked_alloc, hooked_free, ms, nullptr);
            row.alone.push_back(u.mpairs);
            row.cpu_alone.push_back(u.cpu_pair);
            row.direct.push_back(d.mpairs);
            row.hooked.push_back(h.mpairs);
            row.ratio.push_back(h.mpairs / d.mpairs);
            row.cpu_direct.push_back(d.cpu_pair);
            row.cpu_hooked.push_back(h.cpu_pair);
        }
    }
    print_rows(rows, nthreads, rounds, ms, ns_per_tick, alone);
    for (int i = 0; i < kResident; ++i)
        ldshim_memtype_remove(reinterpret_cast<void*>(kResidentBase + (std::uintptr_t(i) << 16)), kRangeSize);
}

}  // namespace hooks_bench
