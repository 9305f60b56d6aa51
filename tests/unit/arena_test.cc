// ldsearch's bump arena with per-class reuse (tools/ldsearch/arena.h).
#include "tools/ldsearch/arena.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <vector>

using ldsearch::BumpArena;

namespace {

// operator new's default alignment is the arena's.
struct Region {
    explicit Region(std::size_t n) : bytes(n) {}
    std::vector<std::byte> bytes;
    std::byte* data() { return bytes.data(); }
};

bool aligned(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % BumpArena::kAlign == 0; }

}  // namespace

TEST(Arena, small_requests_are_aligned_distinct_and_inside_the_region) {
    Region r(1 << 16);
    BumpArena a(r.data(), r.bytes.size());
    std::vector<void*> got;
    for (std::size_t n : {1, 7, 16, 17, 100, 1024, 1025, 4000}) {
        void* p = a.allocate(n);
        ASSERT_NE(p, nullptr) << n;
        EXPECT_TRUE(aligned(p)) << n;
        EXPECT_TRUE(a.owns(p));
        EXPECT_TRUE(a.owns(static_cast<std::byte*>(p) + n - 1));
        std::memset(p, 0xab, n);
        got.push_back(p);
    }
    EXPECT_FALSE(a.owns(r.data() + r.bytes.size()));
    int outside = 0;
    EXPECT_FALSE(a.owns(&outside));
}

TEST(Arena, a_freed_block_is_handed_out_again_for_the_same_class) {
    Region r(1 << 16);
    BumpArena a(r.data(), r.bytes.size());
    void* p = a.allocate(40);
    a.release(p, 40);
    const std::size_t used = a.used();
    EXPECT_EQ(a.allocate(33), p);  // 33..48 bytes share the class
    EXPECT_EQ(a.used(), used);
    void* big = a.allocate(3000);
    a.release(big, 3000);
    EXPECT_EQ(a.allocate(4096), big);  // 2049..4096 share the class
}

TEST(Arena, large_requests_a_full_region_and_a_closed_arena_go_elsewhere) {
    Region r(4096);
    BumpArena a(r.data(), r.bytes.size());
    EXPECT_EQ(a.allocate(BumpArena::kLargeRequest), nullptr);
    void* p = a.allocate(2048);
    ASSERT_NE(p, nullptr);
    EXPECT_NE(a.allocate(2048), nullptr);
    EXPECT_EQ(a.allocate(16), nullptr);  // full
    a.release(p, 2048);
    a.close();
    EXPECT_EQ(a.allocate(2048), nullptr);  // the freed block is not reused after close
    EXPECT_TRUE(a.owns(p));                // but what was handed out stays the arena's
}

// Random allocate/release sequences against a map of live blocks: live blocks
// never overlap, keep their contents, and churn reuses memory instead of
// growing the region.
TEST(Arena, random_churn_never_overlaps_live_blocks_and_stays_bounded) {
    const unsigned seed = std::random_device{}();
    std::printf("seed %u\n", seed);
    std::mt19937 rng(seed);
    Region r(8 << 20);
    BumpArena a(r.data(), r.bytes.size());
    std::map<std::byte*, std::pair<std::size_t, unsigned char>> live;  // start -> size, fill
    std::size_t peak_live = 0, live_bytes = 0;
    for (int step = 0; step < 200000; ++step) {
        const bool grow = live.size() < 50 || (live.size() < 2000 && rng() % 2);
        if (grow) {
            std::size_t n = rng() % 8 ? 1 + rng() % 300 : 1 + rng() % 20000;
            auto* p = static_cast<std::byte*>(a.allocate(n));
            ASSERT_NE(p, nullptr) << "seed " << seed << " step " << step;
            ASSERT_TRUE(aligned(p));
            auto next = live.lower_bound(p);
            if (next != live.end()) {
                ASSERT_LE(p + n, next->first) << "seed " << seed << " step " << step;
            }
            if (next != live.begin()) {
                auto prev = std::prev(next);
                ASSERT_LE(prev->first + prev->second.first, p) << "seed " << seed << " step " << step;
            }
            auto fill = static_cast<unsigned char>(step);
            std::memset(p, fill, n);
            live[p] = {n, fill};
            live_bytes += n;
            peak_live = std::max(peak_live, live_bytes);
        } else {
            auto it = live.begin();
            std::advance(it, rng() % live.size());
            auto [n, fill] = it->second;
            for (std::size_t i = 0; i < n; i += 97) {
                ASSERT_EQ(static_cast<unsigned char>(it->first[i]), fill) << "seed " << seed << " step " << step;
            }
            a.release(it->first, n);
            live_bytes -= n;
            live.erase(it);
        }
    }
    // Reuse keeps the region within a small multiple of the peak live bytes
    // (classes round up to 2x above 1 KiB); without it, 200,000 steps of
    // ~1.3 KB average would need over 100 MB.
    EXPECT_LT(a.used(), 4 * peak_live + (1 << 20)) << "seed " << seed;
}
