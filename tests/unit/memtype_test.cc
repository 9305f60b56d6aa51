// The memory-type registry: edge cases, a property test against a
// deliberately simple model, and readers racing a writer.
#include "ldshim.h"
#include "memtype/registry.h"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace ldshim::memtype;

namespace {
constexpr std::uintptr_t kTop = std::numeric_limits<std::uintptr_t>::max();

void expect_entry(const Info& i, Type t, std::uintptr_t base, std::size_t len) {
    EXPECT_EQ(i.type, t);
    EXPECT_EQ(i.base, base);
    EXPECT_EQ(i.length, len);
}
}  // namespace

TEST(Memtype, unknown_memory_is_unregistered_not_host) {
    Registry r;
    Info i = r.lookup(0x1234);
    EXPECT_EQ(i.type, Type::unregistered);
    EXPECT_EQ(i.base, 0u);
    EXPECT_EQ(i.length, std::numeric_limits<std::size_t>::max());  // the whole address space
    EXPECT_EQ(i.generation, 0u);
}

TEST(Memtype, lookup_inside_and_gaps_around) {
    Registry r;
    r.insert(0x1000, 0x100, Type::cuda, 3);
    Info in = r.lookup(0x10ff);
    expect_entry(in, Type::cuda, 0x1000, 0x100);
    EXPECT_EQ(in.device, 3);
    expect_entry(r.lookup(0x0fff), Type::unregistered, 0, 0x1000);
    expect_entry(r.lookup(0x1100), Type::unregistered, 0x1100, kTop - 0x1100 + 1);
}

TEST(Memtype, adjacent_ranges_stay_separate) {
    Registry r;
    r.insert(0x1000, 0x100, Type::cuda, 0);
    r.insert(0x1100, 0x100, Type::cuda, 0);
    EXPECT_EQ(r.size(), 2u);
    expect_entry(r.lookup(0x10ff), Type::cuda, 0x1000, 0x100);
    expect_entry(r.lookup(0x1100), Type::cuda, 0x1100, 0x100);
    bool spans = false;
    r.lookup(0x10f0, 0x20, &spans);
    EXPECT_TRUE(spans);
}

TEST(Memtype, overlapping_insert_replaces_the_overlap) {
    Registry r;
    r.insert(0x1000, 0x300, Type::host_pinned, -1);
    r.insert(0x1100, 0x100, Type::cuda_managed, 1);
    ASSERT_EQ(r.size(), 3u);
    expect_entry(r.lookup(0x1000), Type::host_pinned, 0x1000, 0x100);
    expect_entry(r.lookup(0x1150), Type::cuda_managed, 0x1100, 0x100);
    expect_entry(r.lookup(0x1200), Type::host_pinned, 0x1200, 0x100);
    // An insert covering several ranges replaces them all.
    r.insert(0x0f00, 0x500, Type::cuda, 2);
    ASSERT_EQ(r.size(), 1u);
    expect_entry(r.lookup(0x1150), Type::cuda, 0x0f00, 0x500);
}

TEST(Memtype, partial_remove_at_both_ends_and_in_the_middle) {
    Registry r;
    r.insert(0x1000, 0x1000, Type::cuda, 0);
    r.remove(0x1000, 0x100);  // front
    r.remove(0x1f00, 0x100);  // back
    r.remove(0x1800, 0x10);   // middle: splits
    ASSERT_EQ(r.size(), 2u);
    expect_entry(r.lookup(0x1100), Type::cuda, 0x1100, 0x700);
    expect_entry(r.lookup(0x1805), Type::unregistered, 0x1800, 0x10);
    expect_entry(r.lookup(0x1810), Type::cuda, 0x1810, 0x6f0);
    auto gen_a = r.lookup(0x1100).generation, gen_b = r.lookup(0x1810).generation;
    EXPECT_EQ(gen_a, gen_b);  // both halves are still the same allocation
}

TEST(Memtype, zero_length_operations_change_nothing) {
    Registry r;
    EXPECT_EQ(r.insert(0x1000, 0, Type::cuda, 0), 0u);
    EXPECT_EQ(r.size(), 0u);
    r.insert(0x1000, 0x10, Type::cuda, 0);
    r.remove(0x1000, 0);
    EXPECT_EQ(r.size(), 1u);
    bool spans = true;
    EXPECT_EQ(r.lookup(0x1000, 0, &spans).type, Type::cuda);
    EXPECT_FALSE(spans);
}

TEST(Memtype, top_of_the_address_space) {
    Registry r;
    r.insert(kTop - 0xf, 0x10, Type::cuda, 0);
    expect_entry(r.lookup(kTop), Type::cuda, kTop - 0xf, 0x10);
    expect_entry(r.lookup(kTop - 0x10), Type::unregistered, 0, kTop - 0xf);
    // A length running past the top is clamped to it.
    r.insert(kTop - 0x3, 0x100, Type::host, -1);
    expect_entry(r.lookup(kTop), Type::host, kTop - 0x3, 0x4);
    bool spans = true;
    r.lookup(kTop - 1, 0x1000, &spans);
    EXPECT_FALSE(spans);
    r.remove(kTop - 0xf, 0x10);
    EXPECT_EQ(r.size(), 0u);
}

TEST(Memtype, free_then_reuse_with_another_type) {
    Registry r;
    auto g1 = r.insert(0x5000, 0x1000, Type::cuda, 0);
    r.remove(0x5000, 0x1000);
    EXPECT_EQ(r.lookup(0x5000).type, Type::unregistered);
    auto g2 = r.insert(0x5000, 0x1000, Type::host_pinned, -1);
    Info i = r.lookup(0x5800);
    EXPECT_EQ(i.type, Type::host_pinned);
    EXPECT_EQ(i.generation, g2);
    EXPECT_NE(g1, g2);
}

TEST(Memtype, clear_forgets_everything) {
    Registry r;
    for (int k = 0; k < 1000; ++k) r.insert(0x10000 + 0x100 * k, 0x80, Type::cuda, 0);
    EXPECT_EQ(r.size(), 1000u);
    r.clear();
    EXPECT_EQ(r.size(), 0u);
    EXPECT_EQ(r.lookup(0x10000).type, Type::unregistered);
}

TEST(Memtype, memory_is_proportional_to_ranges) {
    Registry r;
    for (int k = 0; k < 100000; ++k) r.insert(0x100000 + 0x100 * std::uintptr_t(k), 0x80, Type::cuda, 0);
    double per = double(r.memory_bytes()) / double(r.size());
    std::printf("[ MEMORY   ] %zu ranges, %zu bytes, %.1f bytes per range\n", r.size(), r.memory_bytes(), per);
    EXPECT_LT(per, 64.0);
    r.clear();
    EXPECT_LT(r.memory_bytes(), 256u);
}

// The reference model: one cell per address of a small universe.
namespace {
struct Cell {
    Type type = Type::unregistered;
    int device = -1;
    std::uint64_t gen = 0;
};
constexpr std::uintptr_t kUniverse = 4096;

struct Model {
    std::array<Cell, kUniverse> cells{};
    void set(std::uintptr_t b, std::size_t n, Cell c) {
        for (std::size_t k = 0; k < n && b + k < kUniverse; ++k) cells[b + k] = c;
    }
    // The run of equal cells around p, as the registry would report it.
    Info at(std::uintptr_t p) const {
        std::uintptr_t lo = p, hi = p;
        auto same = [&](std::uintptr_t q) { return cells[q].gen == cells[p].gen && cells[q].type == cells[p].type; };
        while (lo > 0 && same(lo - 1)) --lo;
        while (hi + 1 < kUniverse && same(hi + 1)) ++hi;
        Info i{cells[p].type, cells[p].device, lo, hi - lo + 1, cells[p].gen};
        if (cells[p].type == Type::unregistered && hi + 1 == kUniverse)  // open above
            i.length = lo == 0 ? std::numeric_limits<std::size_t>::max() : kTop - lo + 1;
        return i;
    }
};
}  // namespace

TEST(Memtype, million_random_operations_match_a_simple_model) {
    for (std::uint32_t seed : {1u, 2u, 3u, 4u}) {
        Registry r;
        Model m;
        std::mt19937 rng(seed);
        std::uint64_t ops = 250000;
        for (std::uint64_t op = 0; op < ops; ++op) {
            std::uintptr_t b = rng() % kUniverse;
            std::size_t n = 1 + rng() % 64;
            n = std::min<std::size_t>(n, kUniverse - b);
            unsigned what = rng() % 10;
            if (what < 4) {
                Type t = static_cast<Type>(1 + rng() % 4);
                int dev = static_cast<int>(rng() % 4);
                auto g = r.insert(b, n, t, dev);
                m.set(b, n, {t, dev, g});
            } else if (what < 7) {
                r.remove(b, n);
                m.set(b, n, {});
            } else {
                bool spans = false;
                Info got = r.lookup(b, n, &spans);
                Info want = m.at(b);
                ASSERT_EQ(got.type, want.type) << "seed " << seed << " op " << op << " at " << b;
                ASSERT_EQ(got.base, want.base) << "seed " << seed << " op " << op << " at " << b;
                ASSERT_EQ(got.length, want.length) << "seed " << seed << " op " << op << " at " << b;
                ASSERT_EQ(got.generation, want.generation) << "seed " << seed << " op " << op;
                if (want.type != Type::unregistered) {
                    ASSERT_EQ(got.device, want.device) << "seed " << seed;
                }
                bool open_above = want.type == Type::unregistered && want.base + (want.length - 1) >= kUniverse - 1 &&
                                  want.length > kUniverse;
                bool want_spans = !open_above && b + n - 1 > want.base + (want.length - 1);
                ASSERT_EQ(spans, want_spans) << "seed " << seed << " op " << op << " at " << b << "+" << n;
            }
        }
    }
}

// A second reference, a std::map of whole entries, for trees many levels
// deep: wide address space, lengths from one byte to a quarter of it (so
// that one update cuts or replaces hundreds of entries across leaves), and
// phases that grow the tree, churn it, and shrink it to nothing.
namespace {
struct MapModel {
    struct E {
        std::uintptr_t last;
        Type type;
        int device;
        std::uint64_t gen;
    };
    std::map<std::uintptr_t, E> m;
    // The registry's whole list equals the model: bases, lengths, generations.
    void expect_entries_of(const Registry& r) const {
        auto all = r.entries();
        ASSERT_EQ(all.size(), m.size());
        auto it = m.begin();
        for (const Info& i : all) {
            ASSERT_EQ(i.base, it->first);
            ASSERT_EQ(i.length, it->second.last - it->first + 1);
            ASSERT_EQ(i.generation, it->second.gen);
            ++it;
        }
    }
    void cut(std::uintptr_t b, std::uintptr_t l) {
        auto it = m.upper_bound(b);
        if (it != m.begin()) --it;
        while (it != m.end() && it->first <= l) {
            if (it->second.last < b) {
                ++it;
                continue;
            }
            std::uintptr_t eb = it->first;
            E e = it->second;
            it = m.erase(it);
            if (eb < b) m[eb] = {b - 1, e.type, e.device, e.gen};
            if (e.last > l) it = m.emplace(l + 1, E{e.last, e.type, e.device, e.gen}).first;
        }
    }
    Info at(std::uintptr_t p) const {
        auto it = m.upper_bound(p);
        std::uintptr_t lo = 0, hi = kTop;
        if (it != m.end()) hi = it->first - 1;
        if (it != m.begin()) {
            --it;
            if (p <= it->second.last)
                return {it->second.type, it->second.device, it->first, it->second.last - it->first + 1, it->second.gen};
            lo = it->second.last + 1;
        }
        return {Type::unregistered, -1, lo, hi - lo == kTop ? kTop : hi - lo + 1, 0};
    }
};
}  // namespace

TEST(Memtype, deep_trees_match_a_map_of_entries) {
    for (std::uint32_t seed : {11u, 12u}) {
        Registry r;
        MapModel m;
        std::size_t peak = 0;
        std::mt19937_64 rng(seed);
        constexpr std::uintptr_t kSpace = std::uintptr_t{1} << 36;
        auto length = [&] {
            unsigned k = rng() % 1000;
            std::uintptr_t max = k < 2 ? kSpace / 4 : k < 50 ? (1u << 24) : (1u << 14);
            return 1 + rng() % max;
        };
        auto check_at = [&](std::uintptr_t p, std::uint64_t op) {
            Info got = r.lookup(p), want = m.at(p);
            ASSERT_EQ(got.type, want.type) << "seed " << seed << " op " << op << " at " << p;
            ASSERT_EQ(got.base, want.base) << "seed " << seed << " op " << op << " at " << p;
            ASSERT_EQ(got.length, want.length) << "seed " << seed << " op " << op << " at " << p;
            ASSERT_EQ(got.generation, want.generation) << "seed " << seed << " op " << op;
            ASSERT_EQ(got.device, want.device) << "seed " << seed << " op " << op;
        };
        for (std::uint64_t op = 0; op < 150000; ++op) {
            // Grow, churn, then shrink to nothing.
            unsigned insert_pct = op < 60000 ? 90 : op < 100000 ? 50 : 5;
            std::uintptr_t b = rng() % kSpace;
            std::uintptr_t n = length();
            if (rng() % 100 < insert_pct) {
                Type t = static_cast<Type>(1 + rng() % 4);
                int dev = static_cast<int>(rng() % 8);
                m.cut(b, b + n - 1);
                m.m[b] = {b + n - 1, t, dev, r.insert(b, n, t, dev)};
            } else {
                r.remove(b, n);
                m.cut(b, b + n - 1);
            }
            check_at(b, op);
            check_at(b + n - 1, op);
            check_at(b + n, op);
            check_at(rng() % kSpace, op);
            ASSERT_EQ(r.size(), m.m.size()) << "seed " << seed << " op " << op;
            peak = std::max(peak, m.m.size());
            if (op % 10000 == 0) m.expect_entries_of(r);
        }
        EXPECT_GT(peak, 10000u);  // two interior levels over the leaves
        std::printf("[ SIZE     ] seed %u: up to %zu ranges\n", seed, peak);
        r.remove(0, 2 * kSpace);  // ranges may run past kSpace
        EXPECT_EQ(r.size(), 0u);
        EXPECT_EQ(r.memory_bytes(), 0u);
    }
}

// Allocation-like churn: whole ranges freed and registered again (mostly
// with the same device, as an allocator reuses what was freed), mixed with
// cuts and inserts across ranges, against the map of entries, with every
// search version.
TEST(Memtype, free_and_reuse_churn_matches_a_map_of_entries) {
    const detail::Isa before = detail::current_isa();
    Registry r;
    MapModel m;
    std::mt19937_64 rng(5);
    constexpr std::uintptr_t kBase = 0x100000, kStep = 0x100, kLen = 0x80;
    constexpr std::size_t kRanges = 3000;
    auto put = [&](std::uintptr_t b, std::uintptr_t n, Type t, int dev) {
        m.cut(b, b + n - 1);
        m.m[b] = {b + n - 1, t, dev, r.insert(b, n, t, dev)};
    };
    for (std::size_t i = 0; i < kRanges; ++i) put(kBase + i * kStep, kLen, Type::cuda, static_cast<int>(i % 3));
    const detail::Isa isas[] = {detail::Isa::scalar, detail::Isa::avx2, detail::Isa::avx512};
    for (std::uint64_t op = 0; op < 300000; ++op) {
        std::size_t i = rng() % kRanges;
        std::uintptr_t b = kBase + i * kStep;
        unsigned what = rng() % 100;
        if (what < 45) {
            r.remove(b, kLen);
            m.cut(b, b + kLen - 1);
        } else if (what < 90) {
            put(b, kLen, static_cast<Type>(1 + rng() % 4), static_cast<int>(i % 3 + (what % 8 == 0)));
        } else if (what < 95) {  // across several ranges
            std::uintptr_t n = 1 + rng() % (8 * kStep);
            r.remove(b + kLen / 2, n);
            m.cut(b + kLen / 2, b + kLen / 2 + n - 1);
        } else {
            put(b + rng() % kStep, 1 + rng() % (4 * kStep), Type::host, 7);
        }
        detail::use_isa(isas[op % 3]);  // false (unchanged) where the CPU lacks it
        for (std::uintptr_t p : {b - 1, b, b + kLen - 1, b + kLen, b + kStep - 1, kBase + rng() % (kRanges * kStep)}) {
            Info got = r.lookup(p), want = m.at(p);
            ASSERT_EQ(got.type, want.type) << "op " << op << " at " << p;
            ASSERT_EQ(got.base, want.base) << "op " << op << " at " << p;
            ASSERT_EQ(got.length, want.length) << "op " << op << " at " << p;
            ASSERT_EQ(got.generation, want.generation) << "op " << op << " at " << p;
            ASSERT_EQ(got.device, want.device) << "op " << op << " at " << p;
        }
        ASSERT_EQ(r.size(), m.m.size()) << "op " << op;
        if (op % 20000 == 0) m.expect_entries_of(r);
    }
    detail::use_isa(before);
}

// The search is chosen for the CPU (AVX-512, AVX2 or scalar); every version
// the CPU can run must give the scalar one's answers, spans included, at
// entry edges, in gaps, at 0 and at the very top, over trees from one leaf
// to four levels.
TEST(Memtype, every_search_version_gives_the_same_answers) {
    const detail::Isa before = detail::current_isa();
    std::mt19937_64 rng(21);
    for (std::size_t n : {0u, 5u, 700u, 3000u, 200000u}) {
        Registry r;
        std::vector<std::uintptr_t> probes = {0, 1, kTop - 1, kTop};
        for (std::size_t k = 0; k < n; ++k) {
            std::uintptr_t b = rng() % (std::uintptr_t{1} << 47), len = 1 + rng() % 100000;
            r.insert(b, len, static_cast<Type>(1 + rng() % 4), static_cast<int>(k % 8));
            if (k % 7 == 0) probes.insert(probes.end(), {b - 1, b, b + len - 1, b + len, rng()});
        }
        r.insert(kTop - 4095, 4096, Type::host, 1);  // an entry that ends at the top
        for (std::size_t k = 0; k < 2000; ++k) probes.push_back(rng() % (std::uintptr_t{1} << 48));
        std::vector<std::pair<Info, bool>> want;
        ASSERT_TRUE(detail::use_isa(detail::Isa::scalar));
        for (std::uintptr_t p : probes) {
            bool spans = false;
            Info i = r.lookup(p, 4096, &spans);
            want.emplace_back(i, spans);
        }
        for (detail::Isa isa : {detail::Isa::avx2, detail::Isa::avx512}) {
            if (!detail::use_isa(isa)) continue;
            for (std::size_t k = 0; k < probes.size(); ++k) {
                bool spans = false;
                Info got = r.lookup(probes[k], 4096, &spans);
                const Info& w = want[k].first;
                ASSERT_EQ(got.type, w.type) << "isa " << int(isa) << " n " << n << " p " << probes[k];
                ASSERT_EQ(got.base, w.base) << "isa " << int(isa) << " n " << n << " p " << probes[k];
                ASSERT_EQ(got.length, w.length) << "isa " << int(isa) << " n " << n << " p " << probes[k];
                ASSERT_EQ(got.generation, w.generation) << "isa " << int(isa) << " n " << n;
                ASSERT_EQ(got.device, w.device) << "isa " << int(isa) << " n " << n;
                ASSERT_EQ(spans, want[k].second) << "isa " << int(isa) << " n " << n << " p " << probes[k];
            }
        }
        detail::use_isa(before);
    }
}

#if defined(__x86_64__)
// The search versions the CPU is said to run are the ones the compiler's
// runtime says it supports (memtype reads cpuid and XCR0 itself, so that
// libldshim links no CPU-model constructor).
TEST(Memtype, the_search_versions_offered_are_those_the_cpu_and_kernel_support) {
    const detail::Isa before = detail::current_isa();
    __builtin_cpu_init();
    const bool popcnt = __builtin_cpu_supports("popcnt");
    EXPECT_EQ(detail::use_isa(detail::Isa::avx2), popcnt && __builtin_cpu_supports("avx2"));
    EXPECT_EQ(detail::use_isa(detail::Isa::avx512), popcnt && __builtin_cpu_supports("avx512f"));
    EXPECT_TRUE(detail::use_isa(detail::Isa::scalar));
    detail::use_isa(before);
}
#endif

// Built in address order, as allocators hand out memory, the tree packs its
// leaves: the per-range cost the benchmark prints.
TEST(Memtype, ascending_build_stays_under_40_bytes_per_range) {
    Registry r;
    for (std::uintptr_t k = 0; k < 100000; ++k) r.insert(0x100000 + 0x3000 * k, 0x2000, Type::cuda, 0);
    EXPECT_LE(double(r.memory_bytes()) / double(r.size()), 40.0);
}

TEST(Memtype, readers_only_see_consistent_published_entries) {
    Registry r;
    std::atomic<bool> stop{false};
    std::atomic<std::uint64_t> bad{0}, reads{0};
    // Every entry the writer publishes carries device == f(base, length,
    // generation); a torn or half-updated entry breaks the equation.  The
    // writer only inserts and removes whole 64-byte slots, so entries are
    // never cut, and it bumps a version entry at 0x10 after every operation:
    // a reader must never see the version go backwards.
    auto f = [](std::uintptr_t b, std::size_t l, std::uint64_t g) {
        return static_cast<int>((b ^ (l << 7) ^ (g * 0x9e3779b97f4a7c15ULL)) & 0x7fffffff);
    };
    constexpr std::uintptr_t kBase = 0x100000;
    std::thread writer([&] {
        std::mt19937 rng(7);
        std::uint64_t next_gen = 1;  // a fresh registry numbers inserts 1, 2, ...
        for (int k = 0; k < 100000; ++k) {
            std::uintptr_t b = kBase + (rng() % 4096) * 0x40;
            if (rng() % 3) {
                std::uint64_t g = r.insert(b, 0x40, Type::cuda, f(b, 0x40, next_gen));
                if (g != next_gen) bad++;
                ++next_gen;
            } else {
                r.remove(b, 0x40);
            }
            std::uint64_t g = r.insert(0x10, 1, Type::host, k);
            if (g != next_gen) bad++;
            ++next_gen;
        }
        stop = true;
    });
    std::vector<std::thread> readers;
    for (int t = 0; t < 2; ++t)
        readers.emplace_back([&, t] {
            std::mt19937 rng(100 + t);
            int last_version = -1;
            while (!stop.load(std::memory_order_relaxed)) {
                std::uintptr_t p = kBase + rng() % (4096 * 0x40);
                Info i = r.lookup(p);
                reads.fetch_add(1, std::memory_order_relaxed);
                if (p < i.base || p - i.base >= i.length) bad++;
                if (i.type != Type::unregistered &&
                    (i.type != Type::cuda || i.length != 0x40 || i.device != f(i.base, i.length, i.generation)))
                    bad++;
                Info v = r.lookup(0x10);
                if (v.type == Type::host) {
                    if (v.device < last_version) bad++;
                    last_version = v.device;
                }
            }
        });
    writer.join();
    for (auto& t : readers) t.join();
    EXPECT_EQ(bad.load(), 0u);
    EXPECT_GT(reads.load(), 1000u);
}

// Readers racing frees and re-registrations of whole ranges, as the hooks
// make them.  Every third range is never removed, so a gap never
// covers one; an entry is always a whole range with its own device; a gap
// starts right after a range and ends right before one; and the generation
// a reader sees for a range never goes backwards.
TEST(Memtype, readers_race_frees_and_reuse_of_whole_ranges) {
    Registry r;
    constexpr std::uintptr_t kBase = 0x100000, kStep = 0x100, kLen = 0x80;
    constexpr std::size_t kRanges = 600;
    for (std::size_t i = 0; i < kRanges; ++i) r.insert(kBase + i * kStep, kLen, Type::cuda, static_cast<int>(i));
    std::atomic<bool> stop{false};
    std::atomic<std::uint64_t> bad{0}, reads{0};
    std::thread writer([&] {
        std::mt19937 rng(3);
        for (int k = 0; k < 200000; ++k) {
            std::size_t i = rng() % kRanges;
            if (i % 3 == 0) continue;
            std::uintptr_t b = kBase + i * kStep;
            r.remove(b, kLen);
            r.insert(b, kLen, static_cast<Type>(1 + rng() % 4), static_cast<int>(i));
            if (rng() % 2) r.remove(b, kLen);
        }
        stop = true;
    });
    std::vector<std::thread> readers;
    for (int t = 0; t < 2; ++t)
        readers.emplace_back([&, t] {
            std::mt19937 rng(200 + t);
            std::vector<std::uint64_t> seen(kRanges, 0);
            while (!stop.load(std::memory_order_relaxed)) {
                std::uintptr_t p = kBase + rng() % (kRanges * kStep);
                Info e = r.lookup(p);
                reads.fetch_add(1, std::memory_order_relaxed);
                if (p < e.base || p - e.base >= e.length) bad++;
                if (e.type != Type::unregistered) {
                    std::size_t i = (e.base - kBase) / kStep;
                    if (e.base != kBase + i * kStep || e.length != kLen || e.device != static_cast<int>(i)) bad++;
                    if (e.generation < seen[i]) bad++;
                    seen[i] = e.generation;
                    continue;
                }
                std::uintptr_t last = e.base + (e.length - 1);  // a gap may reach the top
                if (e.base != 0 && (e.base - kBase) % kStep != kLen) bad++;
                if (last < kBase + kRanges * kStep && (last + 1 - kBase) % kStep != 0) bad++;
                for (std::size_t i = 0; i < kRanges; i += 3)
                    if (kBase + i * kStep >= e.base && kBase + i * kStep <= last) bad++;
            }
        });
    writer.join();
    for (auto& t : readers) t.join();
    EXPECT_EQ(bad.load(), 0u);
    EXPECT_GT(reads.load(), 1000u);
}

// Several writers at once, each in a region of its own between ranges that
// are never removed (so that no gap reaches into another region), each
// checking every answer about its region against its own map of entries,
// while readers look anywhere.  Updates are mostly what the hooks make --
// a range put into a gap, a whole range freed -- which leaves take in
// place, mixed with cuts and overlapping inserts, which copy.  Regions
// share leaves, so a writer's lookups meet another writer's updates in
// place.  LDSHIM_TEST_SEED picks the seed; a failure is replayed alone to
// say whether it needs the other threads.
namespace {
constexpr std::uintptr_t kRegion = std::uintptr_t{1} << 22, kPage = 0x1000;
std::uintptr_t region_base(unsigned t) { return 0x10000000 + t * (kRegion + kPage); }

// The first op of writer t at which the registry differed from its map, or
// -1; stops early once `stop` is set.
long run_writer(Registry& r, std::uint64_t seed, unsigned t, long ops, const std::atomic<bool>& failed) {
    std::mt19937_64 rng(seed * 1000003 + t);
    MapModel m;
    const std::uintptr_t lo = region_base(t);
    std::vector<std::uintptr_t> live;  // bases the model holds, for exact frees
    std::vector<MapModel::E> freed;    // what was freed, newest last (base in .gen)
    for (long op = 0; op < ops && !failed.load(std::memory_order_relaxed); ++op) {
        unsigned k = rng() % 100;
        std::uintptr_t b = lo + (rng() % (kRegion / kPage)) * kPage;
        std::uintptr_t n = (1 + rng() % 16) * kPage;
        if (b + n > lo + kRegion) n = lo + kRegion - b;
        if (k < 20 && !freed.empty()) {  // the same range allocated again, as allocators reuse
            MapModel::E e = freed.back();
            freed.pop_back();
            b = e.gen;
            n = e.last - b + 1;
            m.cut(b, e.last);
            m.m[b] = {e.last, e.type, e.device, r.insert(b, n, e.type, e.device)};
        } else if (k < 45 || live.empty()) {  // into a gap where there is one, else over what is there
            int dev = static_cast<int>(rng() % 8);
            Type ty = static_cast<Type>(1 + dev % 4);
            m.cut(b, b + n - 1);
            m.m[b] = {b + n - 1, ty, dev, r.insert(b, n, ty, dev)};
        } else if (k < 90) {  // a whole range freed
            std::size_t i = rng() % live.size();
            auto it = m.m.find(live[i]);
            if (it != m.m.end()) {
                Info was{};
                if (!r.remove_range_at(it->first, &was) || was.base != it->first) return op;
                b = it->first;
                n = it->second.last - it->first + 1;
                freed.push_back({it->second.last, it->second.type, it->second.device, b});
                m.m.erase(it);
            }
        } else {  // a cut
            r.remove(b, n);
            m.cut(b, b + n - 1);
        }
        live.clear();
        if (m.m.size() < 64)
            for (const auto& e : m.m) live.push_back(e.first);
        else
            for (int j = 0; j < 64; ++j) {
                auto it = m.m.lower_bound(lo + (rng() % (kRegion / kPage)) * kPage);
                if (it != m.m.end()) live.push_back(it->first);
            }
        for (std::uintptr_t p : {b, b + n - 1, b + n, lo + rng() % kRegion}) {
            if (p >= lo + kRegion) continue;
            Info got = r.lookup(p), want = m.at(p);
            if (got.type != want.type || got.generation != want.generation || got.device != want.device) return op;
            // A gap's model bounds run past the region: the sentinels bound it there.
            std::uintptr_t wlo = want.base < lo ? lo - kPage : want.base;
            std::uintptr_t whi = want.base + (want.length - 1) >= lo + kRegion ? lo + kRegion + kPage - 1
                                                                               : want.base + (want.length - 1);
            if (want.type == Type::unregistered) {
                wlo = want.base < lo ? lo : wlo;
                whi = want.base + (want.length - 1) >= lo + kRegion ? lo + kRegion - 1 : whi;
            }
            if (got.base != wlo || got.base + (got.length - 1) != whi) return op;
        }
    }
    return -1;
}
}  // namespace

TEST(Memtype, readers_and_writers_on_several_threads_match_a_map_each) {
    const char* env = std::getenv("LDSHIM_TEST_SEED");
    const std::uint64_t seed = env ? std::strtoull(env, nullptr, 10) : 20261206;
    constexpr unsigned kWriters = 3;
    constexpr long kOps = 40000;
    std::printf("[ SEED     ] %llu (LDSHIM_TEST_SEED replays it)\n", static_cast<unsigned long long>(seed));
    auto fence_regions = [](Registry& r) {
        for (unsigned t = 0; t <= kWriters; ++t) r.insert(region_base(t) - kPage, kPage, Type::host, -2);
    };
    Registry r;
    fence_regions(r);
    std::atomic<bool> failed{false}, stop{false};
    std::atomic<std::uint64_t> bad{0}, reads{0};
    std::array<long, kWriters> first_bad{};
    std::vector<std::thread> writers, readers;
    for (unsigned t = 0; t < kWriters; ++t)
        writers.emplace_back([&, t] {
            first_bad[t] = run_writer(r, seed, t, kOps, failed);
            if (first_bad[t] >= 0) failed = true;
        });
    for (unsigned t = 0; t < 2; ++t)
        readers.emplace_back([&, t] {
            std::mt19937_64 rng(seed + 77 + t);
            const std::uintptr_t span = region_base(kWriters) - region_base(0);
            while (!stop.load(std::memory_order_relaxed)) {
                std::uintptr_t p = region_base(0) + rng() % span;
                Info e = r.lookup(p);
                reads.fetch_add(1, std::memory_order_relaxed);
                if (p < e.base || p - e.base >= e.length) bad++;
                // An entry whose type is not its device's (as the writers
                // chose them) mixes columns of two entries.
                if (e.type != Type::unregistered && e.device >= 0 && e.type != static_cast<Type>(1 + e.device % 4))
                    bad++;
                if (e.type == Type::unregistered && (e.base < region_base(0) || e.length > kRegion)) bad++;
            }
        });
    for (auto& w : writers) w.join();
    stop = true;
    for (auto& t : readers) t.join();
    EXPECT_EQ(bad.load(), 0u) << "seed " << seed;
    EXPECT_GT(reads.load(), 1000u);
    for (unsigned t = 0; t < kWriters; ++t) {
        if (first_bad[t] < 0) continue;
        Registry alone;
        fence_regions(alone);
        std::atomic<bool> none{false};
        long again = run_writer(alone, seed, t, first_bad[t] + 1, none);
        ADD_FAILURE() << "seed " << seed << ": writer " << t << " differed from its map at op " << first_bad[t]
                      << (again >= 0 ? "; alone too, at op " + std::to_string(again) + " (a sequential bug)"
                                     : "; not alone (it needs the other threads)");
    }
}

TEST(Memtype, c_api_roundtrip_on_the_global_registry) {
    static char buf[4096];
    ASSERT_EQ(ldshim_memtype_insert(buf, sizeof buf, LDSHIM_MEM_HOST_PINNED, -1), LDSHIM_OK);
    ldshim_meminfo_t info;
    ASSERT_EQ(ldshim_memtype_query(buf + 100, 16, &info), LDSHIM_OK);
    EXPECT_EQ(info.type, LDSHIM_MEM_HOST_PINNED);
    EXPECT_EQ(info.base, static_cast<const void*>(buf));
    EXPECT_EQ(info.length, sizeof buf);
    EXPECT_EQ(ldshim_memtype_query(buf + 4000, 200, &info), LDSHIM_ERR_RANGE_SPANS);
    EXPECT_EQ(ldshim_memtype_query(buf, 1, nullptr), LDSHIM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ldshim_memtype_insert(buf, 1, LDSHIM_MEM_UNREGISTERED, 0), LDSHIM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ldshim_memtype_insert(buf, 1, static_cast<ldshim_memtype_t>(42), 0), LDSHIM_ERR_INVALID_ARGUMENT);
    ASSERT_EQ(ldshim_memtype_remove(buf, sizeof buf), LDSHIM_OK);
    ASSERT_EQ(ldshim_memtype_query(buf, 1, &info), LDSHIM_OK);
    EXPECT_EQ(info.type, LDSHIM_MEM_UNREGISTERED);
}
