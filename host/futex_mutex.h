// A mutex over a futex, for the lock that every start-up takes (the hooks'
// patcher).  std::mutex calls pthread_mutex_lock and pthread_mutex_unlock,
// and each libc function libldshim calls at start-up is one more symbol the
// loader looks up through every loaded object, in every process the preload
// is in.  This one enters libc (syscall) only when a thread has to wait.
// Drepper's "Futexes Are Tricky", mutex 3: the word says free, held, or held
// with perhaps a waiter.  ThreadSanitizer orders through its atomics.
// Lockable: std::lock_guard and std::unique_lock take it.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

namespace ldshim::host {

class FutexMutex {
public:
    void lock() noexcept {
        int c = kFree;
        if (word_.compare_exchange_strong(c, kHeld, std::memory_order_acquire)) return;
        if (c != kContended) c = word_.exchange(kContended, std::memory_order_acquire);
        while (c != kFree) {
            futex(FUTEX_WAIT_PRIVATE, kContended);
            c = word_.exchange(kContended, std::memory_order_acquire);
        }
    }
    bool try_lock() noexcept {
        int c = kFree;
        return word_.compare_exchange_strong(c, kHeld, std::memory_order_acquire);
    }
    void unlock() noexcept {
        if (word_.exchange(kFree, std::memory_order_release) == kContended) futex(FUTEX_WAKE_PRIVATE, 1);
    }

private:
    static constexpr int kFree = 0, kHeld = 1, kContended = 2;
    static_assert(sizeof(std::atomic<int>) == sizeof(int) && std::atomic<int>::is_always_lock_free);
    void futex(int op, int value) noexcept {
        // NOLINTNEXTLINE(cppcoreguidelines-pro-type-vararg): the system call's own interface
        syscall(SYS_futex, reinterpret_cast<int*>(&word_), op, value, nullptr, nullptr, 0);
    }
    std::atomic<int> word_{kFree};
};

}  // namespace ldshim::host
