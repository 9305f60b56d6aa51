// A registry of non-overlapping address ranges and their memory type.
//
// Readers (lookup) are wait-free: they take no lock, allocate nothing and
// never see a torn entry, because they search an immutable snapshot that a
// writer publishes with one atomic store.  Writers serialise on a mutex and
// copy only what changes: the one or two chunks of at most kChunk entries
// that an update touches, and the array of chunk pointers.  Old snapshots are
// freed through epoch-based reclamation (epoch.h).
//
// Addresses are inclusive on the right internally ([base, last]), so a range
// that ends at the very top of the address space is representable.
#pragma once

#include "memtype/epoch.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace ldshim::memtype {

// Values match ldshim_memtype_t in ldshim.h.
enum class Type : std::uint8_t { unregistered = 0, host = 1, host_pinned = 2, cuda = 3, cuda_managed = 4 };

struct Info {
    Type type = Type::unregistered;
    int device = -1;
    std::uintptr_t base = 0;       // of the entry, or of the gap for unregistered
    std::size_t length = 0;        // saturates at SIZE_MAX for a gap reaching the top
    std::uint64_t generation = 0;  // 0 for gaps; new for every insert
};

class Registry {
public:
    static constexpr std::size_t kChunk = 7;  // seven keys and the count: one cache line

    Registry();
    ~Registry();  // no reader may be running
    Registry(const Registry&) = delete;
    Registry& operator=(const Registry&) = delete;

    // The process-wide registry the hooks feed (never destroyed).
    static Registry& global();

    // Registers [base, base+length) with this type; the parts of existing
    // ranges it overlaps are replaced.  length 0 does nothing.  Returns the
    // new range's generation (0 when nothing was inserted).
    std::uint64_t insert(std::uintptr_t base, std::size_t length, Type type, int device);
    // Forgets [base, base+length); a range partly inside is cut (split if the
    // hole is in its middle).  length 0 does nothing.
    void remove(std::uintptr_t base, std::size_t length);
    void clear();

    // The range containing p, or the gap around it.  Wait-free.
    inline Info lookup(std::uintptr_t p) const noexcept;
    // The same for [p, p+length); *spans says whether [p, p+length) leaves
    // the returned entry or gap (crosses into another one).
    inline Info lookup(std::uintptr_t p, std::size_t length, bool* spans) const noexcept;

    // fork(): the writer lock is taken before and released after, in both
    // processes, so a child never inherits it held (registered for global()).
    void fork_prepare() { write_mu_.lock(); }
    // global() if it was built, else nullptr (never builds it).
    static Registry* existing_global();
    void fork_release() { write_mu_.unlock(); }

    std::size_t size() const noexcept;          // number of ranges
    std::size_t memory_bytes() const noexcept;  // bytes held by the current snapshot
    std::vector<Info> entries() const;          // a copy, in address order

    // Immutable once published.  A lookup reads the line of keys, counts the
    // keys <= p with no dependency between them, then reads one entry.
    struct Entry {
        std::uintptr_t last;
        std::uint64_t generation;
        std::int32_t device;
        Type type;
    };
    struct alignas(64) Chunk {
        std::uintptr_t base[kChunk];  // unused slots hold ~0
        std::uint64_t n = 0;
        Entry e[kChunk];
    };
    // One 64-byte-aligned allocation: this header, chunks[nchunks], then
    // first[nchunks] (each chunk's first base, what a lookup binary-searches).
    struct Snapshot {
        std::size_t nchunks;
        std::size_t nentries;
        const Chunk* const* chunks() const { return reinterpret_cast<const Chunk* const*>(this + 1); }
        const Chunk** chunks() { return reinterpret_cast<const Chunk**>(this + 1); }
        const std::uintptr_t* first() const {
            auto p = reinterpret_cast<std::uintptr_t>(chunks() + nchunks);
            return reinterpret_cast<const std::uintptr_t*>((p + 63) & ~std::uintptr_t{63});
        }
        std::uintptr_t* first() { return const_cast<std::uintptr_t*>(static_cast<const Snapshot*>(this)->first()); }
    };

private:
    struct Flat;

    void publish(Snapshot* next, std::vector<const void*> garbage, std::size_t garbage_bytes);
    void retire(std::vector<const void*> blocks, std::size_t bytes);
    void reclaim(bool force);
    void edit(std::uintptr_t base, std::uintptr_t last, const Flat* insert);

    EpochDomain* dom_;  // the process-wide reader slots
    std::atomic<const Snapshot*> current_;
    std::mutex write_mu_;
    std::uint64_t next_generation_ = 1;
    struct Retired {
        std::uint64_t epoch;
        std::vector<const void*> blocks;
        std::size_t bytes;
    };
    std::vector<Retired> retired_;
    std::size_t retired_bytes_ = 0;
};

const char* type_name(Type t);

namespace detail {
// Number of elements of sorted a[0..n) that are <= x, without data-dependent
// branches (the select becomes a cmov).
inline std::size_t count_le(const std::uintptr_t* a, std::size_t n, std::uintptr_t x) noexcept {
    if (n == 0) return 0;
    const std::uintptr_t* b = a;
    while (n > 1) {
        std::size_t half = n / 2;
        b = (b[half] <= x) ? b + half : b;
        n -= half;
    }
    return static_cast<std::size_t>(b - a) + (*b <= x);
}
// The same for one chunk: its unused keys are ~0, so a fixed-width count
// with no dependency between elements replaces the search; the result is
// clamped for p == ~0.
template <std::size_t W>
inline std::size_t count_le_fixed(const std::uintptr_t* a, std::size_t n, std::uintptr_t x) noexcept {
    std::size_t c = 0;
    for (std::size_t k = 0; k < W; ++k) c += a[k] <= x;
    return c < n ? c : n;
}
inline std::size_t span_length(std::uintptr_t lo, std::uintptr_t hi) noexcept {
    std::uintptr_t d = hi - lo;
    return d == ~std::uintptr_t{0} ? ~std::size_t{0} : static_cast<std::size_t>(d + 1);
}
}  // namespace detail

[[gnu::always_inline]] inline Info Registry::lookup(std::uintptr_t p) const noexcept { return lookup(p, 1, nullptr); }

[[gnu::always_inline]] inline Info Registry::lookup(std::uintptr_t p, std::size_t length, bool* spans) const noexcept {
    constexpr std::uintptr_t kTop = ~std::uintptr_t{0};
    EpochDomain::Guard guard(*dom_);
    const Snapshot* s = current_.load(std::memory_order_acquire);
    const std::size_t nc = s->nchunks;
    const std::uintptr_t* first = s->first();
    Info info;
    std::uintptr_t hi;
    if (nc == 0 || p < first[0]) {
        hi = nc ? first[0] - 1 : kTop;
        info = {Type::unregistered, -1, 0, detail::span_length(0, hi), 0};
    } else {
        std::size_t c = detail::count_le(first, nc, p) - 1;  // the count is >= 1: first[0] <= p
        // Acquire: a writer may swap this one pointer in place (see edit()).
        const Chunk* ch = __atomic_load_n(&s->chunks()[c], __ATOMIC_ACQUIRE);
        std::size_t i = detail::count_le_fixed<kChunk>(ch->base, ch->n, p);  // >= 1: ch->base[0] <= p
        std::size_t j = i ? i - 1 : 0;
        const Entry& e = ch->e[j];
        if (p <= e.last) {
            hi = e.last;
            info = {e.type, e.device, ch->base[j], detail::span_length(ch->base[j], hi), e.generation};
        } else {
            hi = i < ch->n ? ch->base[i] - 1 : (c + 1 < nc ? first[c + 1] - 1 : kTop);
            info = {Type::unregistered, -1, e.last + 1, detail::span_length(e.last + 1, hi), 0};
        }
    }
    if (spans) {
        std::uintptr_t want_last = (length == 0) ? p : (length - 1 > kTop - p ? kTop : p + (length - 1));
        *spans = want_last > hi;
    }
    return info;
}

}  // namespace ldshim::memtype
