// ldsearch's allocator for one short run.
//
// A search allocates a few hundred to a few thousand small objects (names,
// trace lines, dependency lists).  With glibc's malloc and free a large
// part of a search's instructions goes to them (docs/performance.md): most
// frees miss its thread cache and go through the bins.  ldsearch replaces
// `operator new` with this arena: a bump pointer over a fixed region, and a
// free list per size class so that a freed block is reused (each page
// touched costs a fault, more than the allocator saves).
//
// Bounded: requests of kLargeRequest bytes and more, everything after the
// region is used up, and everything after close() go to malloc, and
// delete frees them there.
//
// Not a concurrent allocator: one thread at a time until close(), then any
// number (allocate and release do nothing).  `ldsearch check`, the one mode
// with threads, runs for thousands of files on all cores and closes the
// arena before it starts them.
#pragma once

#include <atomic>
#include <cstddef>
#include <new>

namespace ldsearch {

class BumpArena {
public:
    static constexpr std::size_t kAlign = __STDCPP_DEFAULT_NEW_ALIGNMENT__;
    static constexpr std::size_t kLargeRequest = 64 * 1024;

    // `region` must be aligned to kAlign.  constexpr so that the process's
    // arena is ready before any constructor runs.
    constexpr BumpArena(std::byte* region, std::size_t size) noexcept : begin_(region), size_(size) {}

    // kAlign-aligned room for `n` bytes, or nullptr when the request is large,
    // the arena is closed or the region cannot hold it (the caller asks
    // malloc then).
    void* allocate(std::size_t n) noexcept {
        if (n >= kLargeRequest) return nullptr;
        const std::size_t at = next_.load(std::memory_order_relaxed);
        if (at == size_) return nullptr;
        const unsigned c = size_class(n);
        if (Block* b = free_[c]) {
            free_[c] = b->next;
            return b;
        }
        const std::size_t need = class_bytes(c);
        if (need > size_ - at) return nullptr;
        next_.store(at + need, std::memory_order_relaxed);
        return begin_ + at;
    }

    // Takes back `p`, allocated here for `n` bytes, for reuse.  A block whose
    // size is not known is never reused.
    void release(void* p, std::size_t n) noexcept {
        if (n >= kLargeRequest || next_.load(std::memory_order_relaxed) == size_) return;
        const unsigned c = size_class(n);
        free_[c] = new (p) Block{free_[c]};
    }

    // Whether `p` came from allocate().
    bool owns(const void* p) const noexcept {
        auto* b = static_cast<const std::byte*>(p);
        return b >= begin_ && b < begin_ + size_;
    }

    // No more allocations or reuse from the region; what it handed out stays
    // valid.
    void close() noexcept { next_.store(size_, std::memory_order_relaxed); }

    std::size_t used() const noexcept { return next_.load(std::memory_order_relaxed); }

private:
    struct Block {
        Block* next;
    };
    // Classes 0-63: 16 bytes apart up to 1 KiB; 64-69: powers of two up to
    // kLargeRequest.
    static constexpr unsigned kSmallClasses = 64;
    static constexpr unsigned kClasses = kSmallClasses + 6;

    static unsigned size_class(std::size_t n) noexcept {
        if (n <= kSmallClasses * kAlign) return n ? static_cast<unsigned>((n - 1) / kAlign) : 0;
        unsigned c = kSmallClasses;
        for (std::size_t room = 2 * kSmallClasses * kAlign; room < n; room *= 2) ++c;
        return c;
    }
    static std::size_t class_bytes(unsigned c) noexcept {
        if (c < kSmallClasses) return (c + 1) * kAlign;
        return (2 * kSmallClasses * kAlign) << (c - kSmallClasses);
    }

    std::byte* begin_;
    std::size_t size_;
    // Also the closed flag (== size_), read by every thread.
    std::atomic<std::size_t> next_{0};
    Block* free_[kClasses] = {};
};

// Sends every later allocation of this process to malloc.  A no-op where the
// arena is not linked in (the sanitizer builds).
void close_process_arena() noexcept;

}  // namespace ldsearch
