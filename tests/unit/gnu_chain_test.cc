// loader/loaded_extent.h's search_gnu_chain, the DT_GNU_HASH chain search
// that libc's lookups (host/libc.cc) and the first pass's "may this object
// define it?" (hooks/object_scan.h) share: tables laid out as a linker lays
// them out, from seeded random names, against a plain search of the names.
#include "loader/loaded_extent.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace {

using ldshim::loader::ChainResult;
using ldshim::loader::gnu_hash;
using ldshim::loader::search_gnu_chain;

// A table's buckets and chain in one array, and the names of its hashed
// symbols by symbol index (the first `symoffset` symbols are not hashed).
struct Table {
    std::uint32_t nbuckets = 0, symoffset = 0;
    std::vector<std::uint32_t> words;  // buckets, then the chain
    std::vector<std::string> names;    // by symbol index
};

// What GNU ld and lld write: the hashed symbols sorted by bucket, each
// bucket pointing at its first one, the low bit set on each chain's last.
Table build(std::vector<std::string> names, std::uint32_t nbuckets, std::uint32_t symoffset) {
    Table t;
    t.nbuckets = nbuckets;
    t.symoffset = symoffset;
    std::stable_sort(names.begin(), names.end(), [&](const std::string& a, const std::string& b) {
        return gnu_hash(a.c_str()) % nbuckets < gnu_hash(b.c_str()) % nbuckets;
    });
    t.names.assign(symoffset, "");
    t.names.insert(t.names.end(), names.begin(), names.end());
    t.words.assign(nbuckets + names.size(), 0);
    for (std::size_t k = 0; k < names.size(); ++k) {
        const std::uint32_t h = gnu_hash(names[k].c_str()), b = h % nbuckets;
        if (t.words[b] == 0) t.words[b] = static_cast<std::uint32_t>(symoffset + k);
        const bool last = k + 1 == names.size() || gnu_hash(names[k + 1].c_str()) % nbuckets != b;
        t.words[nbuckets + k] = (h & ~1u) | (last ? 1u : 0u);
    }
    return t;
}

ChainResult search(const Table& t, const std::string& name, std::size_t readable_words, std::uint32_t* hit = nullptr) {
    const std::uint32_t* end = t.words.data() + readable_words;
    auto readable = [&](const void* p, std::size_t len) {
        auto* b = static_cast<const char*>(p);
        return b >= reinterpret_cast<const char*>(t.words.data()) && b + len <= reinterpret_cast<const char*>(end);
    };
    auto test = [&](std::uint32_t i) {
        if (i >= t.names.size()) return ChainResult::unreadable;
        if (t.names[i] != name) return ChainResult::absent;
        if (hit) *hit = i;
        return ChainResult::found;
    };
    return search_gnu_chain(t.words.data(), t.nbuckets, t.symoffset, gnu_hash(name.c_str()), readable, test);
}

std::string random_name(std::mt19937& rng) {
    static constexpr char kChars[] = "abcdefghijklmnopqrstuvwxyz_0123456789";
    std::uniform_int_distribution<int> len(1, 12), pick(0, sizeof kChars - 2);
    std::string s(1, "abcxyz_"[pick(rng) % 7]);
    for (int n = len(rng); n > 0; --n) s += kChars[pick(rng)];
    return s;
}

TEST(GnuHashChain, every_hashed_name_is_found_at_its_index_and_no_other_name_is) {
    const std::uint32_t seed = std::random_device{}();
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    for (int round = 0; round < 200; ++round) {
        std::vector<std::string> names;
        for (int n = std::uniform_int_distribution<int>(1, 300)(rng); n > 0; --n) names.push_back(random_name(rng));
        std::sort(names.begin(), names.end());
        names.erase(std::unique(names.begin(), names.end()), names.end());
        const auto nbuckets = std::uniform_int_distribution<std::uint32_t>(1, 64)(rng);
        const auto symoffset = std::uniform_int_distribution<std::uint32_t>(1, 20)(rng);
        const Table t = build(names, nbuckets, symoffset);
        for (const std::string& name : names) {
            std::uint32_t hit = 0;
            ASSERT_EQ(search(t, name, t.words.size(), &hit), ChainResult::found) << name;
            EXPECT_EQ(t.names[hit], name);
        }
        for (int k = 0; k < 50; ++k) {
            const std::string other = random_name(rng);
            const bool present = std::binary_search(names.begin(), names.end(), other);
            EXPECT_EQ(search(t, other, t.words.size()), present ? ChainResult::found : ChainResult::absent) << other;
        }
    }
}

TEST(GnuHashChain, a_chain_that_runs_past_the_readable_words_is_unreadable_not_absent) {
    Table t = build({"dlopen", "dlerror", "dlsym"}, 1, 1);
    t.words.back() &= ~1u;  // the last symbol no longer ends the chain
    EXPECT_EQ(search(t, "malloc", t.words.size()), ChainResult::unreadable);
    EXPECT_EQ(search(t, "dlopen", t.words.size()), ChainResult::found);
    // Cut before the chain's first word: even a present name cannot be read.
    EXPECT_EQ(search(t, "dlopen", t.nbuckets), ChainResult::unreadable);
}

TEST(GnuHashChain, an_empty_bucket_is_absent_and_one_below_the_hashed_symbols_is_unreadable) {
    Table t = build({"dlopen"}, 4, 3);
    const std::uint32_t b = gnu_hash("dlopen") % 4;
    const std::string other = [&] {
        for (std::string s = "x";; s += 'x')
            if (gnu_hash(s.c_str()) % 4 != b) return s;
    }();
    EXPECT_EQ(search(t, other, t.words.size()), ChainResult::absent);
    t.words[b] = 2;  // a symbol the table does not hash
    EXPECT_EQ(search(t, "dlopen", t.words.size()), ChainResult::unreadable);
}

}  // namespace
