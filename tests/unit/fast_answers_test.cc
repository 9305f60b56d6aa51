// The resolver's lock-free already-loaded answers (resolver/fast_answers.h)
// alone: what a reader gets while a writer rewrites the slots, run under
// ThreadSanitizer by scripts/tsan.sh.
#include "resolver/fast_answers.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

using ldshim::loader::Object;
using namespace ldshim::resolver;

namespace {

Object library(const std::string& path, const char* soname) {
    Object o;
    o.kind = Object::Kind::library;
    o.name = path;
    if (soname) o.facts.soname = soname;
    return o;
}

}  // namespace

TEST(FastAnswers, a_name_is_answered_only_at_the_generation_it_was_remembered_at) {
    FastAnswers fast;
    const Object o = library("/opt/lib/libfa1.so.1", "libfa1.so.1");
    fast.remember("libfa1.so.1", o, {10, 5});
    const char* handed = nullptr;
    const std::string asked = "libfa1.so.1";
    ASSERT_TRUE(FastAnswers::lookup(asked.c_str(), {10, 5}, handed));
    EXPECT_EQ(handed, asked.c_str()) << "glibc knows it by its SONAME: the name asked is handed on";
    EXPECT_FALSE(FastAnswers::lookup(asked.c_str(), {11, 6}, handed)) << "something was loaded since";
    EXPECT_FALSE(FastAnswers::lookup("libfa1.so", {10, 5}, handed)) << "never remembered";
}

TEST(FastAnswers, a_name_only_the_model_holds_is_answered_with_the_path) {
    FastAnswers fast;
    const Object o = library("/opt/lib/libfa2.so", nullptr);
    fast.remember("libfa2-dev.so", o, {3, 3});
    const char* handed = nullptr;
    ASSERT_TRUE(FastAnswers::lookup("libfa2-dev.so", {3, 3}, handed));
    EXPECT_STREQ(handed, "/opt/lib/libfa2.so");
}

// One writer rewrites slots with names that share a slot's neighbourhood
// while readers look them up: a reader sees either no answer or a whole
// one, never a name from one write with the path of another.  Seeded.
TEST(FastAnswers, readers_see_whole_answers_while_a_writer_rewrites_them) {
    const unsigned seed = std::random_device{}();
    std::printf("FastAnswers: seed %u\n", seed);
    FastAnswers fast;
    constexpr int kNames = 64;
    std::vector<std::string> names, paths;
    std::vector<Object> objects;
    for (int i = 0; i < kNames; ++i) {
        names.push_back("libfa-" + std::to_string(i) + "-long-enough-to-compare-its-middle.so");
        paths.push_back("/opt/fa/" + std::to_string(i) + "/" + names.back());
        objects.push_back(library(paths.back(), nullptr));
    }
    std::atomic<bool> stop{false};
    std::atomic<long> answered{0}, wrong{0};
    std::vector<std::thread> readers;
    for (int r = 0; r < 3; ++r)
        readers.emplace_back([&, r] {
            std::mt19937 rng(seed + static_cast<unsigned>(r));
            while (!stop.load(std::memory_order_relaxed)) {
                const int i = static_cast<int>(rng() % kNames);
                const char* handed = nullptr;
                if (!FastAnswers::lookup(names[static_cast<std::size_t>(i)].c_str(), {1, 1}, handed)) continue;
                answered.fetch_add(1, std::memory_order_relaxed);
                if (!handed || std::strcmp(handed, paths[static_cast<std::size_t>(i)].c_str()) != 0)
                    wrong.fetch_add(1, std::memory_order_relaxed);
            }
        });
    // At least 20,000 writes, and until the readers have had 1,000 answers
    // (at most 10 s: on a loaded machine they may start late).
    std::mt19937 rng(seed);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (int n = 0; n < 20000 || (answered.load() < 1000 && std::chrono::steady_clock::now() < until); ++n) {
        const auto i = static_cast<std::size_t>(rng() % kNames);
        fast.remember(names[i], objects[i], {1, 1});
    }
    stop = true;
    for (auto& t : readers) t.join();
    EXPECT_EQ(wrong.load(), 0) << "seed " << seed;
    EXPECT_GT(answered.load(), 0) << "no reader ever found an answer (seed " << seed << ")";
}
