#include "memtype/epoch.h"

#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <new>

namespace ldshim::memtype {
namespace {

pthread_key_t g_slot_key;

long membarrier(int cmd) { return syscall(__NR_membarrier, cmd, 0, 0); }

}  // namespace

constinit thread_local EpochDomain::Slot* EpochDomain::t_slot_ __attribute__((tls_model("initial-exec"))) = nullptr;

// Thread exit: give the slot back.
void release_slot(void* p) {
    auto* s = static_cast<EpochDomain::Slot*>(p);
    s->epoch.store(0, std::memory_order_release);
    s->owner.store(0, std::memory_order_release);
}

EpochDomain::EpochDomain() { pthread_key_create(&g_slot_key, release_slot); }

// Readers that see kExpedited announce with plain stores, so it is published
// only once registration has succeeded, and every writer waits for the
// decision before it reads the slots (it must then run membarrier).
void EpochDomain::decide() noexcept {
    int m = kUndecided;
    if (mode_.compare_exchange_strong(m, kDeciding, std::memory_order_acq_rel)) {
#if defined(__SANITIZE_THREAD__)
        // ThreadSanitizer does not model membarrier(2); use the fenced readers
        // it can reason about.
        long cmds = -1;
#else
        long cmds = membarrier(MEMBARRIER_CMD_QUERY);
#endif
        bool expedited = cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
                         membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
        mode_.store(expedited ? kExpedited : kFenced, std::memory_order_release);
        return;
    }
    while (mode_.load(std::memory_order_acquire) == kDeciding) sched_yield();
}

namespace {
std::atomic<EpochDomain*> g_domain{nullptr};  // once built (lib/fork_handlers.cc)
}  // namespace

EpochDomain& EpochDomain::instance() {
    // Never destroyed: readers in other threads may run until the very end of
    // the process, after static destructors.
    alignas(EpochDomain) static unsigned char storage[sizeof(EpochDomain)];
    static EpochDomain* d = [] {
        auto* dom = new (storage) EpochDomain();
        g_domain.store(dom, std::memory_order_release);
        return dom;
    }();
    return *d;
}

EpochDomain* EpochDomain::existing() { return g_domain.load(std::memory_order_acquire); }

EpochDomain::Slot* EpochDomain::claim_slot() noexcept {
    if (t_slot_) return t_slot_;
    for (auto& s : slots_) {
        std::uint32_t free = 0;
        if (s.owner.load(std::memory_order_relaxed) == 0 &&
            s.owner.compare_exchange_strong(free, 1, std::memory_order_acq_rel)) {
            t_slot_ = &s;
            // The first 32 keys live in static storage: this does not allocate.
            pthread_setspecific(g_slot_key, &s);
            return t_slot_;
        }
    }
    return nullptr;  // all slots taken: the guard uses the overflow counter
}

std::uint64_t EpochDomain::advance() noexcept { return epoch_.fetch_add(1, std::memory_order_acq_rel); }

std::uint64_t EpochDomain::oldest_reader() noexcept {
    prepare_writer();
    if (mode_.load(std::memory_order_acquire) == kExpedited)
        membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED);
    else
        epoch_.fetch_add(0, std::memory_order_seq_cst);  // a full fence (readers used seq_cst exchanges)
    if (overflow_readers_.load(std::memory_order_acquire) != 0) return 0;
    std::uint64_t oldest = UINT64_MAX;
    for (auto& s : slots_) {
        std::uint64_t r = s.epoch.load(std::memory_order_acquire);
        if (r != 0 && r < oldest) oldest = r;
    }
    return oldest;
}

void EpochDomain::reset_after_fork() noexcept {
    for (auto& s : slots_) {
        if (&s == t_slot_) continue;
        s.epoch.store(0, std::memory_order_relaxed);
        s.owner.store(0, std::memory_order_relaxed);
    }
    overflow_readers_.store(0, std::memory_order_relaxed);
    // membarrier registration is per process: register the child too.  A
    // decision another thread was making is made again by the next writer.
    int m = mode_.load(std::memory_order_relaxed);
    if (m == kDeciding) mode_.store(kUndecided, std::memory_order_relaxed);
    if (m == kExpedited && membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) != 0)
        mode_.store(kFenced, std::memory_order_relaxed);
}

}  // namespace ldshim::memtype
