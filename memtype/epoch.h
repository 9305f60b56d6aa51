// Epoch-based reclamation for wait-free readers.
//
// Readers announce the epoch they started in, in a slot of their own, with a
// plain store: no read-modify-write, no fence, no allocation.  The writer,
// before freeing anything a reader might still hold, runs membarrier(2)
// (MEMBARRIER_CMD_PRIVATE_EXPEDITED), which makes every running thread's
// announcement visible, then frees only what was retired before the oldest
// announced epoch.  Where membarrier is unavailable, readers announce with a
// sequentially consistent exchange instead.  The process registers for
// membarrier when its first writer starts (prepare_writer), not before: most
// processes that load ldshim never write, and readers until then use the
// exchange.
#pragma once

#include "machine/machine.h"

#include <atomic>
#include <cstdint>

namespace ldshim::memtype {

class EpochDomain {
public:
    static constexpr int kSlots = 256;

    // The process-wide domain (reader slots are per thread, so they are shared
    // by every registry).
    static EpochDomain& instance();

    struct alignas(machine::kCacheLine) Slot {
        std::atomic<std::uint64_t> epoch{0};  // 0: not reading
        std::atomic<std::uint32_t> owner{0};  // 1: claimed by a thread
    };

    // RAII read-side critical section.  Wait-free; inline because it is the
    // whole cost of a lookup beyond the search itself.
    class Guard {
    public:
        explicit Guard(EpochDomain& d) noexcept : d_(d), slot_(t_slot_ ? t_slot_ : d.claim_slot()) {
            if (__builtin_expect(slot_ == nullptr, 0)) {
                d_.overflow_readers_.fetch_add(1, std::memory_order_seq_cst);
                return;
            }
            std::uint64_t e = d_.epoch_.load(std::memory_order_acquire);
            if (__builtin_expect(d_.mode_.load(std::memory_order_relaxed) == kExpedited, 1)) {
                slot_->epoch.store(e, std::memory_order_relaxed);
                std::atomic_signal_fence(std::memory_order_seq_cst);  // the writer's membarrier is the fence
            } else {
                slot_->epoch.exchange(e, std::memory_order_seq_cst);
            }
        }
        ~Guard() {
            if (__builtin_expect(slot_ == nullptr, 0)) {
                d_.overflow_readers_.fetch_sub(1, std::memory_order_release);
                return;
            }
            slot_->epoch.store(0, std::memory_order_release);
        }
        Guard(const Guard&) = delete;
        Guard& operator=(const Guard&) = delete;

    private:
        EpochDomain& d_;
        Slot* slot_;
    };

    // Writer side (callers serialise writers themselves).  prepare_writer()
    // before a writer's first update: it decides, once per process, whether
    // readers may announce with plain stores (membarrier registered).
    void prepare_writer() noexcept {
        if (mode_.load(std::memory_order_acquire) < kExpedited) decide();
    }
    std::uint64_t advance() noexcept;  // returns the epoch that just ended
    // The oldest epoch a reader may still be inside (after making every
    // reader's announcement visible): what was retired in an earlier epoch
    // can be freed.  UINT64_MAX when no reader is inside; 0 when a reader
    // without a slot is (then nothing may be freed).
    std::uint64_t oldest_reader() noexcept;
    bool uses_membarrier() const noexcept { return mode_.load(std::memory_order_acquire) == kExpedited; }

    // fork() child: only the calling thread survives; forget the others.
    // (Called by lib/fork_handlers.cc.)
    void reset_after_fork() noexcept;
    // instance() if it was built, else nullptr (never builds it).
    static EpochDomain* existing();

private:
    // How readers announce: undecided until the first writer, deciding while
    // one registers (another writer waits), then expedited (membarrier) or
    // fenced (seq_cst exchanges).  Readers treat all but expedited as fenced.
    enum Mode : int { kUndecided, kDeciding, kExpedited, kFenced };

    EpochDomain();
    Slot* claim_slot() noexcept;  // first read in a thread; no allocation
    void decide() noexcept;

    // initial-exec: a direct %fs-relative load, not a __tls_get_addr call.
    static constinit thread_local Slot* t_slot_ __attribute__((tls_model("initial-exec")));

    std::atomic<std::uint64_t> epoch_{1};
    std::atomic<int> mode_{kUndecided};
    Slot slots_[kSlots];
    // Readers that found no free slot: counted, and reclamation waits for 0.
    alignas(machine::kCacheLine) std::atomic<std::uint64_t> overflow_readers_{0};
    friend void release_slot(void*);
};

}  // namespace ldshim::memtype
