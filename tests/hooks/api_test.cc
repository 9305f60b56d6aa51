// The hooks' C API inside this very process: argument checking, the
// subscriber limit, the log accessors, and -- with the fake CUDA libraries
// dlopened here -- concurrent hooked allocations while other threads load
// and unload libraries.  In-process so that ThreadSanitizer sees it
// (scripts/tsan.sh).
#include "differential/harness.h"
#include "fixture_cc.h"
#include "ldshim.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <unistd.h>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

using ldshim::difftest::quote;
using ldshim::difftest::sh;

namespace {

const std::string kFixtures = FIXTURE_DIR;

void count_event(const ldshim_mem_event_t* e, void* arg) {
    auto* counts = static_cast<std::atomic<long>*>(arg);
    counts[e->kind == LDSHIM_EVENT_ALLOC ? 0 : 1].fetch_add(1, std::memory_order_relaxed);
}
void other_event(const ldshim_mem_event_t*, void*) {}

TEST(HooksApi, arguments_are_checked_and_nothing_is_installed_by_asking) {
    EXPECT_EQ(ldshim_hooks_install(0), LDSHIM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ldshim_hooks_install(0x100), LDSHIM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ldshim_hooks_uninstall(), LDSHIM_OK) << "uninstall without install is a no-op";
    EXPECT_EQ(ldshim_hooks_refresh(), LDSHIM_OK);
    EXPECT_EQ(ldshim_hooks_active(), 0u);
    ldshim_hook_op_t op;
    EXPECT_EQ(ldshim_hooks_log_get(ldshim_hooks_log_size(), &op), LDSHIM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ldshim_hooks_log_get(0, nullptr), LDSHIM_ERR_INVALID_ARGUMENT);
    EXPECT_STREQ(ldshim_hook_op_status_name(LDSHIM_HOOK_OP_CHAINED), "chained");
    EXPECT_STREQ(ldshim_hook_op_status_name(99), "unknown");
    EXPECT_EQ(ldshim_hooks_subscribe(nullptr, nullptr), LDSHIM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ldshim_hooks_unsubscribe(other_event, nullptr), LDSHIM_ERR_INVALID_ARGUMENT) << "not subscribed";
}

TEST(HooksApi, at_most_16_subscribers_and_a_freed_place_is_reused) {
    std::vector<int> args(17);
    for (int i = 0; i < 16; ++i) ASSERT_EQ(ldshim_hooks_subscribe(other_event, &args[i]), LDSHIM_OK) << i;
    EXPECT_EQ(ldshim_hooks_subscribe(other_event, &args[16]), LDSHIM_ERR_NO_MEMORY);
    EXPECT_EQ(ldshim_hooks_unsubscribe(other_event, &args[3]), LDSHIM_OK);
    EXPECT_EQ(ldshim_hooks_subscribe(other_event, &args[16]), LDSHIM_OK);
    for (int i = 0; i < 17; ++i)
        if (i != 3) {
            EXPECT_EQ(ldshim_hooks_unsubscribe(other_event, &args[i]), LDSHIM_OK) << i;
        }
}

TEST(HooksApi, log_write_reports_a_bad_descriptor) { EXPECT_EQ(ldshim_hooks_log_write(-1), LDSHIM_ERR_SYSTEM); }

// Allocations through hooked pointers on 4 threads while 2 threads dlopen
// and dlclose a library that allocates, and one more refreshes.
TEST(HooksApi, concurrent_hooked_allocations_loads_and_unloads_keep_the_registry_exact) {
    if (!HAVE_CUDA_HOOKS) GTEST_SKIP() << "SKIPPED: libldshim was built without CUDA headers";
    char tmpl[] = "/tmp/ldshim-hooks-api-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    std::string d = tmpl;
    std::string cc = FIXTURE_CC " -std=gnu11 -O1 -I" + quote(kFixtures) + " ";
    ASSERT_EQ(sh(cc + "-fPIC -shared -fvisibility=hidden -Wl,-soname,libcuda.so.1 -o " + quote(d + "/libcuda.so.1") +
                 " " + quote(kFixtures + "/fake_cuda.c") + " -lpthread"),
              0);
    ASSERT_EQ(sh(cc + "-fPIC -shared -fvisibility=hidden -Wl,-soname,libcudart.so.13 -Wl,--version-script=" +
                 quote(kFixtures + "/fake_cudart.map") + " -Wl,-rpath,'$ORIGIN' -o " + quote(d + "/libcudart.so.13") +
                 " " + quote(kFixtures + "/fake_cudart.c") + " -ldl -lpthread"),
              0);
    for (const char* n : {"a", "b"})
        ASSERT_EQ(sh(cc + "-fPIC -shared -o " + quote(d + "/libuser_" + n + ".so") + " " +
                     quote(kFixtures + "/consumer_lib.c") + " -L" + quote(d) +
                     " -l:libcudart.so.13 -l:libcuda.so.1 -Wl,-rpath," + quote(d)),
                  0);
    void* rt = dlopen((d + "/libcudart.so.13").c_str(), RTLD_NOW | RTLD_GLOBAL);
    ASSERT_NE(rt, nullptr) << dlerror();
    std::atomic<long> counts[2] = {0, 0};
    ASSERT_EQ(ldshim_hooks_subscribe(count_event, counts), LDSHIM_OK);
    ASSERT_EQ(ldshim_hooks_install(LDSHIM_HOOK_CUDA), LDSHIM_OK);
    using alloc_fn = int (*)(void**, size_t);
    using free_fn = int (*)(void*);
    // dlsym hands out the hooks: this process has no slot of its own for them.
    auto cuda_malloc = reinterpret_cast<alloc_fn>(dlsym(rt, "cudaMalloc"));
    auto cuda_free = reinterpret_cast<free_fn>(dlsym(rt, "cudaFree"));
    ASSERT_TRUE(cuda_malloc && cuda_free);
    std::atomic<long> wrong{0}, done_loaders{0}, allocations{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
            for (int i = 0; i < 2000 || done_loaders.load() < 2; ++i) {
                void* p = nullptr;
                size_t n = 64 + static_cast<size_t>(t * 8 + i % 13);
                if (cuda_malloc(&p, n) != 0) {
                    wrong++;
                    return;
                }
                ldshim_meminfo_t info;
                if (ldshim_memtype_query(p, 1, &info) != LDSHIM_OK || info.type != LDSHIM_MEM_CUDA || info.base != p ||
                    info.length != n)
                    wrong++;
                allocations++;
                if (cuda_free(p) != 0) wrong++;
            }
        });
    for (const char* n : {"a", "b"})
        threads.emplace_back([&, n] {
            std::string path = d + "/libuser_" + n + ".so";
            for (int i = 0; i < 200; ++i) {
                void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
                if (!h) {
                    wrong++;
                    continue;
                }
                ldshim_hooks_refresh();  // this process's dlopen is not hooked: say so
                auto a = reinterpret_cast<alloc_fn>(dlsym(h, "consumer_alloc"));
                void* p = nullptr;
                ldshim_meminfo_t info;
                if (!a || a(&p, 24) != 0 || ldshim_memtype_query(p, 1, &info) != LDSHIM_OK ||
                    info.type != LDSHIM_MEM_CUDA)
                    wrong++;
                else
                    cuda_free(p);
                dlclose(h);
            }
            done_loaders++;
        });
    for (auto& t : threads) t.join();
    EXPECT_EQ(wrong.load(), 0);
    EXPECT_GE(allocations.load(), 8000);
    EXPECT_EQ(counts[0].load(), counts[1].load()) << "every allocation event has its free";
    EXPECT_EQ(ldshim_hooks_uninstall(), LDSHIM_OK);
    EXPECT_EQ(ldshim_hooks_unsubscribe(count_event, counts), LDSHIM_OK);
    sh("rm -rf " + quote(d));
}

}  // namespace
