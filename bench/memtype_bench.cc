// Memory-type lookups and updates: ldshim's registry against UCX's own
// memtype cache (Debian's libucs, the real library), a std::map under
// std::shared_mutex, and a static layout (branchless binary search over a
// sorted array, rebuilt on every change) that shows what this machine can do.
// One binary, one run; the ratios and the per-range memory come last:
//   build/bench/memtype_bench --benchmark_min_time=0.3 --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true
#include "memtype/registry.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#ifdef LDSHIM_HAVE_UCS
#include <ucs/memory/memtype_cache.h>
#endif

using ldshim::memtype::Info;
using ldshim::memtype::Registry;
using ldshim::memtype::Type;

namespace {

// N allocation-like ranges: page-aligned, sizes log-uniform from 4 KiB to
// 4 MiB, separated by random gaps of 4 to 64 KiB (so that UCX, which merges
// adjacent ranges of one type, keeps them apart).  Three layouts:
//   cluster       all of them upwards from one base (today's layout);
//   two_clusters  half like a heap (upwards from 0x5555'5555'0000), half like
//                 mmap / device memory (downwards from 0x7ff0'0000'0000);
//   uniform47     bases uniform over the 47-bit user address space.
// Random pointers fall inside random ranges.  Nothing is dereferenced.
enum Layout : int { kCluster = 0, kTwoClusters = 1, kUniform47 = 2 };
const char* const kLayoutName[] = {"cluster", "two_clusters", "uniform47"};
constexpr std::size_t kPtrs = 1 << 16;

struct Range {
    std::uintptr_t base;
    std::size_t len;
};

std::vector<Range> make_layout(Layout lay, std::size_t n) {
    std::mt19937_64 rng(42);
    std::vector<Range> v;
    auto len = [&] { return std::size_t{4096} << (rng() % 11); };  // 4 KiB .. 4 MiB
    auto gap = [&] { return 4096 * (1 + rng() % 16); };
    if (lay == kUniform47) {
        std::vector<std::uintptr_t> bases(n);
        for (auto& b : bases) b = (rng() % (std::uintptr_t{1} << 35)) << 12;  // pages below 2^47
        std::sort(bases.begin(), bases.end());
        for (std::size_t i = 0; i < n; ++i) {
            std::size_t l = len();
            std::uintptr_t room = i + 1 < n ? bases[i + 1] - bases[i] : l + 4096;
            if (room < 8192) continue;  // too close to the next one
            v.push_back({bases[i], std::min(l, room - 4096)});
        }
        return v;
    }
    std::uintptr_t up = lay == kCluster ? 0x7f0000000000ULL : 0x555555550000ULL;
    std::uintptr_t down = 0x7ff000000000ULL;
    std::vector<Range> high;
    for (std::size_t i = 0; i < n; ++i) {
        std::size_t l = len();
        if (lay == kTwoClusters && i % 2) {
            down -= l + gap();
            high.push_back({down, l});
        } else {
            v.push_back({up, l});
            up += l + gap();
        }
    }
    v.insert(v.end(), high.rbegin(), high.rend());
    return v;
}

std::vector<std::uintptr_t> random_pointers(const std::vector<Range>& rs, std::uint32_t seed = 1) {
    std::mt19937_64 rng(seed);
    std::vector<std::uintptr_t> v(kPtrs);
    for (auto& p : v) {
        const Range& r = rs[rng() % rs.size()];
        p = r.base + rng() % r.len;
    }
    return v;
}

// std::map under a reader-writer lock: the obvious thread-safe registry.
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

// The machine's reference: sorted bases and lasts, searched without branches.
// It cannot be updated in place (a change rebuilds it).
struct StaticTable {
    std::vector<std::uintptr_t> base, last;
    std::uintptr_t lookup(std::uintptr_t p) const {
        const std::uintptr_t* b = base.data();
        std::size_t n = base.size();
        while (n > 1) {
            std::size_t half = n / 2;
            b = (b[half] <= p) ? b + half : b;
            n -= half;
        }
        std::size_t i = static_cast<std::size_t>(b - base.data());
        return *b <= p && p <= last[i] ? *b : 0;
    }
};

// Everything built for one (layout, N), kept while the benchmarks that use
// it run (they are registered in that order), then dropped.
struct Fixture {
    Layout lay = kCluster;
    std::size_t n = 0;
    std::vector<Range> ranges;
    std::vector<std::uintptr_t> ptrs;
    std::unique_ptr<Registry> reg;
    std::unique_ptr<MapRegistry> map;
    std::unique_ptr<StaticTable> table;
};
Fixture g_fix;

Fixture& fixture(Layout lay, std::size_t n) {
    if (g_fix.ranges.empty() || g_fix.lay != lay || g_fix.n != n) {
        g_fix = Fixture{};
        g_fix.lay = lay;
        g_fix.n = n;
        g_fix.ranges = make_layout(lay, n);
        g_fix.ptrs = random_pointers(g_fix.ranges);
    }
    return g_fix;
}
Registry& ldshim_of(Fixture& f) {
    if (!f.reg) {
        f.reg = std::make_unique<Registry>();
        for (const auto& rg : f.ranges) f.reg->insert(rg.base, rg.len, Type::cuda, 0);
    }
    return *f.reg;
}
MapRegistry& map_of(Fixture& f) {
    if (!f.map) {
        f.map = std::make_unique<MapRegistry>();
        for (const auto& rg : f.ranges) f.map->m[rg.base] = {rg.base + rg.len - 1, 3};
    }
    return *f.map;
}
StaticTable& table_of(Fixture& f) {
    if (!f.table) {
        f.table = std::make_unique<StaticTable>();
        for (const auto& rg : f.ranges) {
            f.table->base.push_back(rg.base);
            f.table->last.push_back(rg.base + rg.len - 1);
        }
    }
    return *f.table;
}

// Independent lookups (chain = false) let the CPU overlap several; in a
// dependent chain the next pointer's index depends on the last answer (by
// a bit that is always 0), so each lookup waits for the previous one.
template <bool kChain>
void BM_ldshim(benchmark::State& st, Layout lay, std::size_t n) {
    Fixture& f = fixture(lay, n);
    const Registry& r = ldshim_of(f);
    const std::uintptr_t* ptrs = f.ptrs.data();
    std::size_t k = 0;
    std::uintptr_t dep = 0;
    for (auto _ : st) {
        Info info = r.lookup(ptrs[(k++ + dep) & (kPtrs - 1)]);
        if constexpr (kChain) dep = info.base >> 63;
        benchmark::DoNotOptimize(info);
    }
    st.counters["bytes_per_range"] = double(r.memory_bytes()) / double(r.size());
    st.counters["held_per_range"] = double(r.held_bytes()) / double(r.size());
}

template <bool kChain>
void BM_map(benchmark::State& st, Layout lay, std::size_t n) {
    Fixture& f = fixture(lay, n);
    const MapRegistry& r = map_of(f);
    const std::uintptr_t* ptrs = f.ptrs.data();
    std::size_t k = 0;
    unsigned dep = 0;
    for (auto _ : st) {
        int t = r.lookup(ptrs[(k++ + dep) & (kPtrs - 1)]);
        if constexpr (kChain) dep = static_cast<unsigned>(t) >> 16;
        benchmark::DoNotOptimize(t);
    }
}

template <bool kChain>
void BM_static(benchmark::State& st, Layout lay, std::size_t n) {
    Fixture& f = fixture(lay, n);
    const StaticTable& r = table_of(f);
    const std::uintptr_t* ptrs = f.ptrs.data();
    std::size_t k = 0;
    std::uintptr_t dep = 0;
    for (auto _ : st) {
        std::uintptr_t b = r.lookup(ptrs[(k++ + dep) & (kPtrs - 1)]);
        if constexpr (kChain) dep = b >> 63;
        benchmark::DoNotOptimize(b);
    }
}

#ifdef LDSHIM_HAVE_UCS
// UCX's cache is process-wide: it holds one fixture's ranges at a time.
struct UcxLoaded {
    Layout lay = kCluster;
    std::size_t n = 0;
    std::vector<Range> ranges;
} g_ucx;

bool ucx_load(const Fixture& f) {
    ucs_memory_info_t mi;
    ucs_memtype_cache_lookup(reinterpret_cast<void*>(f.ranges[0].base), 1, &mi);  // creates the global cache
    if (g_ucx.ranges.empty() || g_ucx.lay != f.lay || g_ucx.n != f.n) {
        for (const auto& rg : g_ucx.ranges) ucs_memtype_cache_remove(reinterpret_cast<void*>(rg.base), rg.len);
        for (const auto& rg : f.ranges)
            ucs_memtype_cache_update(reinterpret_cast<void*>(rg.base), rg.len, UCS_MEMORY_TYPE_CUDA,
                                     UCS_SYS_DEVICE_ID_UNKNOWN);
        g_ucx = {f.lay, f.n, f.ranges};
    }
    return ucs_memtype_cache_lookup(reinterpret_cast<void*>(f.ranges[0].base + 1), 1, &mi) == UCS_OK;
}

template <bool kChain>
void BM_ucx(benchmark::State& st, Layout lay, std::size_t n) {
    Fixture& f = fixture(lay, n);
    if (!ucx_load(f)) {
        st.SkipWithError("UCX memtype cache unavailable (UCX_MEMTYPE_CACHE=n?)");
        return;
    }
    const std::uintptr_t* ptrs = f.ptrs.data();
    ucs_memory_info_t mi;
    std::size_t k = 0;
    std::uintptr_t dep = 0;
    for (auto _ : st) {
        ucs_status_t s = ucs_memtype_cache_lookup(reinterpret_cast<void*>(ptrs[(k++ + dep) & (kPtrs - 1)]), 1, &mi);
        if constexpr (kChain) dep = reinterpret_cast<std::uintptr_t>(mi.base_address) >> 63;
        benchmark::DoNotOptimize(s);
        benchmark::DoNotOptimize(mi);
    }
}
#endif

// An allocation and its free, as the hooks report them: a 4 KiB range put
// into a random gap (away from both neighbours) of the N registered ones,
// then removed.  Time per insert + remove pair.
std::vector<std::uintptr_t> free_spots(const std::vector<Range>& rs) {
    std::vector<std::uintptr_t> v;
    for (std::size_t i = 0; i + 1 < rs.size(); ++i)
        if (rs[i + 1].base >= rs[i].base + rs[i].len + 3 * 4096) v.push_back(rs[i].base + rs[i].len + 4096);
    std::shuffle(v.begin(), v.end(), std::mt19937_64(5));
    return v;
}

void BM_update_ldshim(benchmark::State& st, Layout lay, std::size_t n) {
    Fixture& f = fixture(lay, n);
    Registry& r = ldshim_of(f);
    auto spots = free_spots(f.ranges);
    std::size_t k = 0;
    for (auto _ : st) {
        std::uintptr_t p = spots[k++ % spots.size()];
        r.insert(p, 4096, Type::cuda, 0);
        r.remove(p, 4096);
    }
    st.counters["bytes_per_range"] = double(r.memory_bytes()) / double(r.size());
}

void BM_update_map(benchmark::State& st, Layout lay, std::size_t n) {
    Fixture& f = fixture(lay, n);
    MapRegistry& r = map_of(f);
    auto spots = free_spots(f.ranges);
    std::size_t k = 0;
    for (auto _ : st) {
        std::uintptr_t p = spots[k++ % spots.size()];
        {
            std::unique_lock lock(r.mu);
            r.m[p] = {p + 4095, 3};
        }
        std::unique_lock lock(r.mu);
        r.m.erase(p);
    }
}

#ifdef LDSHIM_HAVE_UCS
void BM_update_ucx(benchmark::State& st, Layout lay, std::size_t n) {
    Fixture& f = fixture(lay, n);
    if (!ucx_load(f)) {
        st.SkipWithError("UCX memtype cache unavailable (UCX_MEMTYPE_CACHE=n?)");
        return;
    }
    auto spots = free_spots(f.ranges);
    std::size_t k = 0;
    for (auto _ : st) {
        auto* p = reinterpret_cast<void*>(spots[k++ % spots.size()]);
        ucs_memtype_cache_update(p, 4096, UCS_MEMORY_TYPE_CUDA, UCS_SYS_DEVICE_ID_UNKNOWN);
        ucs_memtype_cache_remove(p, 4096);
    }
}
#endif

// Reader throughput over 1,000 ranges: no writer (0), a writer removing and
// re-inserting random ranges as fast as it can (1, the worst case), one
// doing it at 100,000 updates per second (2, far above allocation rates),
// and the unthrottled writer on a registry of its own (3: what a busy writer
// costs readers that share nothing with it -- the epoch domain's interrupts
// and the machine -- the floor for 1).
alignas(64) Registry* g_shared = nullptr;
Registry* g_written = nullptr;  // what the writer updates: g_shared, or its own (3)
std::atomic<bool> g_stop{false};
std::thread g_writer;
// Its own cache line: the writer counts on every update, and the readers
// read g_shared on every lookup.
alignas(64) std::atomic<std::uint64_t> g_writes{0};

void writer_loop(bool paced, const std::vector<Range>& rs) {
    std::mt19937_64 rng(99);
    auto next = std::chrono::steady_clock::now();
    while (!g_stop.load(std::memory_order_relaxed)) {
        if (paced) {  // two updates every 20 us
            next += std::chrono::microseconds(20);
            while (std::chrono::steady_clock::now() < next && !g_stop.load(std::memory_order_relaxed)) {
            }
        }
        const Range& rg = rs[rng() % rs.size()];
        g_written->remove(rg.base, rg.len);
        g_written->insert(rg.base, rg.len, Type::cuda, 1);
        g_writes.fetch_add(2, std::memory_order_relaxed);
    }
}

void BM_readers(benchmark::State& st) {
    constexpr std::size_t n = 1000;
    static const std::vector<Range> rs = make_layout(kCluster, n);
    const bool with_writer = st.range(0) != 0;
    const bool paced = st.range(0) == 2;
    if (st.thread_index() == 0) {
        g_shared = new Registry();
        for (const auto& rg : rs) g_shared->insert(rg.base, rg.len, Type::cuda, 0);
        g_written = g_shared;
        if (st.range(0) == 3) {
            g_written = new Registry();
            for (const auto& rg : rs) g_written->insert(rg.base, rg.len, Type::cuda, 0);
        }
        g_stop = false;
        g_writes = 0;
        if (with_writer) g_writer = std::thread(writer_loop, paced, std::cref(rs));
    }
    auto ptrs = random_pointers(rs, 7 + static_cast<std::uint32_t>(st.thread_index()));
    std::size_t k = 0;
    for (auto _ : st) {
        auto info = g_shared->lookup(ptrs[k++ & (kPtrs - 1)]);
        benchmark::DoNotOptimize(info);
    }
    st.SetItemsProcessed(st.iterations());
    if (st.thread_index() == 0) {
        g_stop = true;
        if (g_writer.joinable()) g_writer.join();
        if (g_written != g_shared) delete g_written;
        st.counters["writer_ops"] = benchmark::Counter(double(g_writes.load()), benchmark::Counter::kIsRate);
    }
}

// Registration, grouped by fixture so that each is built once.
const std::size_t kSizes[] = {10, 1000, 100000, 1000000};

void add(const std::string& name, void (*fn)(benchmark::State&, Layout, std::size_t), Layout lay, std::size_t n) {
    benchmark::RegisterBenchmark(name.c_str(), fn, lay, n);
}

void register_all() {
    for (std::size_t n : kSizes) {
        std::string sn = std::to_string(n);
        sn.insert(0, 1, '/');  // not "/" + ...: GCC 12 -O3 warns (-Wrestrict, a false positive)
        add("lookup/ldshim" + sn, BM_ldshim<false>, kCluster, n);
#ifdef LDSHIM_HAVE_UCS
        add("lookup/ucx" + sn, BM_ucx<false>, kCluster, n);
#endif
        add("lookup/map" + sn, BM_map<false>, kCluster, n);
        add("lookup/static" + sn, BM_static<false>, kCluster, n);
        add("lookup_chain/ldshim" + sn, BM_ldshim<true>, kCluster, n);
#ifdef LDSHIM_HAVE_UCS
        add("lookup_chain/ucx" + sn, BM_ucx<true>, kCluster, n);
#endif
        add("lookup_chain/map" + sn, BM_map<true>, kCluster, n);
        add("lookup_chain/static" + sn, BM_static<true>, kCluster, n);
        add("update/ldshim" + sn, BM_update_ldshim, kCluster, n);
#ifdef LDSHIM_HAVE_UCS
        add("update/ucx" + sn, BM_update_ucx, kCluster, n);
#endif
        add("update/map" + sn, BM_update_map, kCluster, n);
    }
    for (Layout lay : {kTwoClusters, kUniform47})
        for (std::size_t n : {std::size_t{1000}, std::size_t{100000}}) {
            std::string sn = std::string("/") + kLayoutName[lay] + "/" + std::to_string(n);
            add("layout/ldshim" + sn, BM_ldshim<false>, lay, n);
#ifdef LDSHIM_HAVE_UCS
            add("layout/ucx" + sn, BM_ucx<false>, lay, n);
#endif
            add("layout/static" + sn, BM_static<false>, lay, n);
            add("layout_chain/ldshim" + sn, BM_ldshim<true>, lay, n);
            add("layout_chain/static" + sn, BM_static<true>, lay, n);
            add("layout_update/ldshim" + sn, BM_update_ldshim, lay, n);
        }
    benchmark::RegisterBenchmark("readers/writer", BM_readers)
        ->Arg(0)
        ->Arg(1)
        ->Arg(2)
        ->Arg(3)
        ->Threads(1)
        ->Threads(2)
        ->UseRealTime();
}

// Keeps each row's time per iteration (the median when repeated) for the
// ratio table printed after the run, and hands every report to the display
// reporter Google Benchmark's own flags choose (--benchmark_format=json
// prints JSON; a reporter of our own would always print the console table).
class Collector : public benchmark::BenchmarkReporter {
public:
    std::map<std::string, double> ns;
    Collector() : display_(benchmark::CreateDefaultDisplayReporter()) {}
    // Where the tables after the run go: stdout under the console table,
    // stderr when stdout carries JSON or CSV.
    std::FILE* tables() const { return dynamic_cast<benchmark::ConsoleReporter*>(display_.get()) ? stdout : stderr; }
    bool ReportContext(const Context& context) override { return display_->ReportContext(context); }
    void Finalize() override { display_->Finalize(); }
    void ReportRuns(const std::vector<Run>& runs) override {
        for (const Run& r : runs) {
            std::string name = r.benchmark_name();
            bool median = r.run_type == Run::RT_Aggregate && r.aggregate_name == "median";
            if (r.run_type == Run::RT_Aggregate && !median) continue;
            if (median) name = name.substr(0, name.size() - 7);
            if (!median && ns.count(name)) continue;  // the first repetition stands for unaggregated runs
            // CPU time: this machine is shared, and a row's wall time
            // includes the time other programs had its core (the reader
            // rows print both; their items_per_second is wall-clock).
            ns[name] = r.GetAdjustedCPUTime();
        }
        display_->ReportRuns(runs);
    }

private:
    std::unique_ptr<benchmark::BenchmarkReporter> display_;
};

void ratio(const Collector& c, const std::string& num, const std::string& den, const char* what) {
    auto a = c.ns.find(num), b = c.ns.find(den);
    if (a == c.ns.end() || b == c.ns.end() || b->second <= 0) return;
    std::fprintf(c.tables(), "  %-44s %-38s %8.2f ns / %8.2f ns = %6.2fx\n", what, (num + " : " + den).c_str(),
                 a->second, b->second, a->second / b->second);
}

void print_ratios(const Collector& c) {
    std::fprintf(c.tables(), "\nratios (medians of CPU time per operation):\n");
    for (std::size_t n : kSizes) {
        std::string sn = std::to_string(n);
        sn.insert(0, 1, '/');  // not "/" + ...: GCC 12 -O3 warns (-Wrestrict, a false positive)
        ratio(c, "lookup/ucx" + sn, "lookup/ldshim" + sn, "ldshim faster than UCX");
        ratio(c, "lookup/map" + sn, "lookup/ldshim" + sn, "ldshim faster than map");
        ratio(c, "lookup/ldshim" + sn, "lookup/static" + sn, "ldshim over static layout");
        ratio(c, "lookup_chain/ldshim" + sn, "lookup_chain/static" + sn, "chain: ldshim over static");
        ratio(c, "update/ucx" + sn, "update/ldshim" + sn, "update: ldshim faster than UCX");
    }
    for (Layout lay : {kTwoClusters, kUniform47})
        for (std::size_t n : {std::size_t{1000}, std::size_t{100000}}) {
            std::string sn = std::string("/") + kLayoutName[lay] + "/" + std::to_string(n);
            ratio(c, "layout/ucx" + sn, "layout/ldshim" + sn, "ldshim faster than UCX");
            ratio(c, "layout/ldshim" + sn, "layout/static" + sn, "ldshim over static layout");
        }
    for (const char* t : {"threads:1", "threads:2"})
        for (const char* w : {"1", "2", "3"})
            ratio(c, std::string("readers/writer/") + w + "/real_time/" + t,
                  std::string("readers/writer/0/real_time/") + t, "reader: time per lookup with a writer");
}

// Memory per range as the hooks build the registry (in address order) and
// after random churn, for each layout at 100,000 ranges.
void print_memory(std::FILE* out) {
    std::fprintf(out, "\nmemory per range (live nodes / everything the pools hold):\n");
    for (Layout lay : {kCluster, kTwoClusters, kUniform47}) {
        auto rs = make_layout(lay, 100000);
        Registry r;
        for (const auto& rg : rs) r.insert(rg.base, rg.len, Type::cuda, 0);
        double n = double(r.size());
        std::fprintf(out, "  %-13s 100000 ranges, address order: %5.1f / %5.1f bytes", kLayoutName[lay],
                     double(r.memory_bytes()) / n, double(r.held_bytes()) / n);
        std::mt19937_64 rng(3);
        for (int k = 0; k < 200000; ++k) {
            const Range& rg = rs[rng() % rs.size()];
            r.remove(rg.base, rg.len);
            r.insert(rg.base, rg.len, Type::cuda, 1);
        }
        std::fprintf(out, "; after 200,000 random remove+insert: %5.1f / %5.1f bytes\n", double(r.memory_bytes()) / n,
                     double(r.held_bytes()) / n);
    }
}

}  // namespace

int main(int argc, char** argv) {
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    register_all();
    Collector reporter;
    benchmark::RunSpecifiedBenchmarks(&reporter);
    g_fix = Fixture{};
    print_ratios(reporter);
    print_memory(reporter.tables());
    benchmark::Shutdown();
    return 0;
}
