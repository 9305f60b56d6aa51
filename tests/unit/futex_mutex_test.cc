// host/futex_mutex.h: the patcher's lock, a futex of its own instead of
// pthread_mutex_lock (one libc function fewer to bind at every start-up).
#include "host/futex_mutex.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace {

using ldshim::host::FutexMutex;

TEST(FutexMutex, threads_that_contend_never_hold_it_together_and_none_is_left_waiting) {
    FutexMutex mu;
    constexpr int kThreads = 8, kRounds = 20000;
    int inside = 0, most = 0;
    long long total = 0;  // guarded by mu: a lost update shows as a short count
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&] {
            for (int i = 0; i < kRounds; ++i) {
                std::lock_guard lock(mu);
                most = std::max(most, ++inside);
                ++total;
                --inside;
            }
        });
    for (auto& th : threads) th.join();  // a waiter never woken would hang here
    EXPECT_EQ(most, 1);
    EXPECT_EQ(total, static_cast<long long>(kThreads) * kRounds);
}

TEST(FutexMutex, try_lock_fails_while_another_holds_it_and_succeeds_once_released) {
    FutexMutex mu;
    mu.lock();
    bool got = true;
    std::thread([&] { got = mu.try_lock(); }).join();
    EXPECT_FALSE(got);
    mu.unlock();
    std::thread([&] {
        got = mu.try_lock();
        if (got) mu.unlock();
    }).join();
    EXPECT_TRUE(got);
}

TEST(FutexMutex, a_thread_blocked_in_lock_goes_on_when_the_holder_unlocks) {
    FutexMutex mu;
    mu.lock();
    std::atomic<bool> entered{false};
    std::thread waiter([&] {
        std::lock_guard lock(mu);
        entered = true;
    });
    // Let the waiter reach the futex (a contended word), then release.
    for (int i = 0; i < 100 && !entered; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_FALSE(entered);
    mu.unlock();
    waiter.join();
    EXPECT_TRUE(entered);
}

}  // namespace
