// Random library trees against the real loader (generator.h).  Knobs, all
// optional:
//   LDSHIM_GEN_SEEDS=N      trees to run (default 250; with events 150)
//   LDSHIM_GEN_EVENTS=1     trees with process events among their dlopens
//                           (generator.h; the test generator-events)
//   LDSHIM_GEN_SEED=S       base seed: tree i uses S+i (default: random, printed)
//   LDSHIM_GEN_ONLY=S1,S2   run exactly these seeds
//   LDSHIM_GEN_JOBS=J       trees run at once (default: the number of CPUs)
//   LDSHIM_GEN_RESOLVER=0   skip the runtime resolver's run (=report: print its
//                           differences without failing)
//   LDSHIM_GEN_RETURN_POINTS=0  the resolver without return points, as under a
//                           shadow stack (LDSHIM_RETURN_POINTS=0): its one known
//                           limit is then counted, not failed
//   LDSHIM_GEN_SHRINK=K     shrink and print at most K differing trees (default 3)
//   LDSHIM_GEN_VERBOSE=1    a line for every seed (2: and each differing tree, unshrunk)
//   LDSHIM_GEN_SYSROOT=DIR  the loader of this root instead of this machine's
//                           (Workshop: built here, run chrooted; root only)
//   LDSHIM_GEN_SYSROOT_LIB=PATH  libldshim inside that root, for the resolver's
//                           runs (without it the resolver does not run there)
//   LDSHIM_GEN_LDSEARCH=PATH  another ldsearch binary to test
// The last line is the summary: "N trees: K differ".
#include "generator.h"
#include "harness.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

using namespace ldshim::difftest::gen;
using ldshim::difftest::env_number;

namespace {

// Trees with process events (LDSHIM_GEN_EVENTS=1).
bool with_events() { return env_number("LDSHIM_GEN_EVENTS", 0) != 0; }

GenTree tree_of(const Workshop& w, std::uint64_t seed) {
    return generate(seed, w.can_use_cache(), w.machine(), with_events());
}

std::vector<std::uint64_t> seeds_to_run() {
    std::vector<std::uint64_t> seeds;
    if (const char* only = std::getenv("LDSHIM_GEN_ONLY"); only && *only) {
        for (const char* p = only; *p;) {
            char* end = nullptr;
            seeds.push_back(std::strtoull(p, &end, 10));
            p = *end ? end + 1 : end;
        }
        std::printf("generator: seeds %s\n", only);
        return seeds;
    }
    std::uint64_t base = env_number("LDSHIM_GEN_SEED", std::random_device{}() % 1000000000u);
    std::uint64_t n = env_number("LDSHIM_GEN_SEEDS", with_events() ? 150 : 250);
    std::printf("generator: base seed %llu, %llu trees%s (LDSHIM_GEN_SEED=%llu reproduces them)\n",
                static_cast<unsigned long long>(base), static_cast<unsigned long long>(n),
                with_events() ? " with process events" : "", static_cast<unsigned long long>(base));
    for (std::uint64_t i = 0; i < n; ++i) seeds.push_back(base + i);
    return seeds;
}

struct Tally {
    std::mutex mu;
    std::vector<std::uint64_t> differ, resolver_differ, resolver_known, broken;
    std::vector<std::string> broken_reports;
    std::size_t started = 0, crashed = 0, glibc_only = 0;
};

// Runs every seed on `jobs` threads; each tree lives in its own directory.
void run_seeds(const Workshop& w, const std::vector<std::uint64_t>& seeds, bool resolver, Tally& tally) {
    std::atomic<std::size_t> next{0};
    auto verbosity = env_number("LDSHIM_GEN_VERBOSE", 0);
    bool verbose = verbosity != 0;
    auto worker = [&] {
        for (std::size_t i; (i = next++) < seeds.size();) {
            GenTree t = tree_of(w, seeds[i]);
            Verdict v = w.run(t, resolver);
            // The known limit exists only without return points.
            bool known = v.resolver_differs() && without_return_points() && w.resolver_is_glibc_given_paths(t);
            // Not excused, but said: a difference that building the model
            // before any event removes is one of reading the start-up late.
            bool late = v.resolver_differs() && !known && w.resolver_is_model_built_late(t);
            std::lock_guard<std::mutex> lock(tally.mu);
            tally.started += v.started;
            tally.glibc_only += v.glibc_only;
            tally.crashed += v.crashed;
            if (v.broken) {
                tally.broken.push_back(seeds[i]);
                tally.broken_reports.push_back(describe(t) + v.report);
            }
            if (v.differs() && !v.broken) tally.differ.push_back(seeds[i]);
            if (v.resolver_differs()) (known ? tally.resolver_known : tally.resolver_differ).push_back(seeds[i]);
            if (verbose || v.differs() || v.resolver_differs())
                std::printf("seed %llu: %s%s%s\n", static_cast<unsigned long long>(seeds[i]),
                            v.broken      ? "BROKEN"
                            : v.differs() ? "ldsearch differs"
                                          : "same",
                            v.resolver_differs() ? ", resolver differs" : "",
                            late ? " (its model built before any event matches)" : "");
            // 2: the whole tree and what differs, before any shrinking.
            if (verbosity >= 2 && (v.differs() || v.resolver_differs()))
                std::printf("%s%s%s", describe(t).c_str(), v.report.c_str(), v.resolver.c_str());
            std::fflush(stdout);
        }
    };
    unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
    auto jobs = static_cast<unsigned>(env_number("LDSHIM_GEN_JOBS", cpus));
    std::vector<std::thread> pool;
    for (unsigned j = 0; j < jobs; ++j) pool.emplace_back(worker);
    for (auto& th : pool) th.join();
}

// Shrinks the first few differing seeds and prints each small tree.
std::string minimised(const Workshop& w, std::vector<std::uint64_t> seeds, Check which) {
    std::sort(seeds.begin(), seeds.end());
    std::string out;
    std::size_t max = env_number("LDSHIM_GEN_SHRINK", 3);
    for (std::size_t i = 0; i < seeds.size() && i < max; ++i) {
        GenTree small = w.shrink(tree_of(w, seeds[i]), which, 400);
        Verdict v = w.run(small, which == Check::resolver);
        out += "seed " + std::to_string(seeds[i]) + " differs; minimised tree:\n" + describe(small) +
               (which == Check::resolver ? v.resolver : v.report) + "\n";
    }
    return out;
}

std::string seed_list(std::vector<std::uint64_t> seeds) {
    std::sort(seeds.begin(), seeds.end());
    std::string s;
    // Appended piecewise: `" " + std::to_string(x)` at -O3 trips GCC 12's
    // -Wrestrict false positive.
    for (auto x : seeds) {
        s += ' ';
        s += std::to_string(x);
    }
    return s;
}

}  // namespace

// ldsearch against the loader must agree on every tree, and so must the
// runtime resolver; without return points (LDSHIM_GEN_RETURN_POINTS=0) its
// one known limit there (Workshop::resolver_is_glibc_given_paths) is
// counted and shown.  LDSHIM_GEN_RESOLVER=report only prints the
// resolver's differences; =0 skips its run.
TEST(Generator, random_trees_match_the_loader) {
    const char* sysroot = std::getenv("LDSHIM_GEN_SYSROOT");
    const char* sysroot_lib = std::getenv("LDSHIM_GEN_SYSROOT_LIB");
    if (sysroot && *sysroot) {
        if (geteuid() != 0) GTEST_SKIP() << "SKIPPED: running " << sysroot << "'s loader needs chroot(2), root only";
        std::printf("generator: the loader of %s\n", sysroot);
    }
    Workshop w(sysroot ? sysroot : "", sysroot_lib ? sysroot_lib : "");
    const char* res_mode = std::getenv("LDSHIM_GEN_RESOLVER");
    bool resolver = (!res_mode || std::string(res_mode) != "0") && w.can_run_resolver();
    bool strict = !res_mode || std::string(res_mode) != "report";
    std::vector<std::uint64_t> seeds = seeds_to_run();
    auto t0 = std::chrono::steady_clock::now();
    Tally tally;
    run_seeds(w, seeds, resolver, tally);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!tally.differ.empty()) ADD_FAILURE() << minimised(w, tally.differ, Check::ldsearch);
    if (!tally.resolver_differ.empty()) {
        std::string m = minimised(w, tally.resolver_differ, Check::resolver);
        if (strict)
            ADD_FAILURE() << m;
        else
            std::printf("the runtime resolver differs (not failing: LDSHIM_GEN_RESOLVER=report):\n%s", m.c_str());
    }
    if (!tally.resolver_known.empty())
        std::printf(
            "[ KNOWN    ] the resolver's known limit without return points (glibc does not know an object "
            "ldshim loaded by the name it was asked for, or knows it by a path spelt with a \".\" step) on "
            "seeds:%s\n",
            seed_list(tally.resolver_known).c_str());
    for (const auto& r : tally.broken_reports) ADD_FAILURE() << "a generated tree could not be run:\n" << r;
    if (!tally.differ.empty()) std::printf("ldsearch differs on seeds:%s\n", seed_list(tally.differ).c_str());
    if (!tally.resolver_differ.empty())
        std::printf("the resolver differs on seeds:%s\n", seed_list(tally.resolver_differ).c_str());
    std::printf(
        "%zu trees: %zu differ (ldsearch against LD_DEBUG=libs; %zu got past startup; %zu broken%s); "
        "resolver: %s; census: %zu loaded by glibc alone%s; %.1f s, %.0f trees/minute%s\n",
        seeds.size(), tally.differ.size(), tally.started, tally.broken.size(),
        tally.crashed ? ("; " + std::to_string(tally.crashed) + " died of a signal, searches compared").c_str() : "",
        resolver ? (std::to_string(tally.resolver_differ.size()) + " differ, " +
                    std::to_string(tally.resolver_known.size()) + " known limit")
                       .c_str()
                 : "not run",
        tally.glibc_only, without_return_points() ? " (no return points)" : "", secs,
        secs > 0 ? 60.0 * static_cast<double>(seeds.size()) / secs : 0.0,
        w.can_use_cache() ? "" : " (no private ld.so.cache: unshare -m failed)");
    EXPECT_TRUE(tally.differ.empty());
    // Never worse than glibc: every operation glibc alone loaded, ldshim
    // loaded too, and the same object -- wherever a return point exists.
    if (resolver && strict && !without_return_points()) {
        EXPECT_EQ(tally.glibc_only, 0u);
    }
}
