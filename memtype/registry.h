// A registry of non-overlapping address ranges and their memory type.
//
// The ranges live in a B+tree.  Readers (lookup) are wait-free: they take no
// lock, allocate nothing and never see a torn entry.  One writer at a time (a
// futex lock) changes it, in the cheapest of three ways:
//   - in place, in the one leaf it touches (what a hook's allocation and free
//     nearly always are): a range after every slot the leaf has used is
//     written into the next free slot, a range that goes is marked dead, and
//     either is published by one release store of the leaf's state word (its
//     slot count and dead mask).  A leaf's slots are written once: a dead
//     slot is never reused in place, so what a reader read under an older
//     state stays true (see Leaf);
//   - by copying that leaf without its dead slots and swapping the copy into
//     its parent's child slot, when the leaf is full of slots or the change
//     is elsewhere in it but keeps its first key;
//   - the others (splits, merges, edits across leaves) copy the path from the
//     root down to what changes, at most once per node per update, and
//     publish a new root.
// Nodes come from per-registry pools of 512- and 1024-byte blocks; replaced
// nodes go back to them through epoch-based reclamation (epoch.h), batched so
// that readers pay its interrupt rarely.
//
// Addresses are inclusive on the right internally ([base, last]), so a range
// that ends at the very top of the address space is representable.
#pragma once

#include "host/futex_mutex.h"
#include "machine/machine.h"
#include "memtype/epoch.h"

#include <atomic>
#include <chrono>
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

namespace detail {
constexpr std::uintptr_t kTop = ~std::uintptr_t{0};
constexpr std::uintptr_t kHeightMask = 255;  // a root is node | height (nodes are 512-aligned)
constexpr std::size_t kInnerKeys = 63;       // 64 children
constexpr std::size_t kLeafKeys = 16;

// Interior node, eight cache lines: four of keys (compared four at once with
// SIMD where the CPU has it), then four of children.  key[i] is exactly the
// smallest base in child[i + 1]'s subtree, so the leaf a lookup reaches holds
// the entry at or before p, and the separator it passed on the right is the
// next entry's base.  Unused keys hold ~0.
struct alignas(1024) Inner {
    std::uintptr_t key[kInnerKeys];
    std::uint16_t n;      // keys in use; children n + 1
    std::uint8_t fresh;   // writer only: built by the update in progress
    std::uint8_t pad[5];  // NOLINT: layout
    // Loaded with acquire: the writer may swap one slot of a published node.
    const void* child[kInnerKeys + 1];
};
// Leaf, eight cache lines: the keys a lookup compares, then the columns it
// reads one element of.  tag = generation << 8 | type.
//
// The memory-ordering argument of an update in place.  `n` (slots used) and
// `dead` (bit i: slot i's range is gone) form one 32-bit state word, which
// the writer publishes with a release store and a reader loads once, with
// acquire, before it reads a key.  A reader therefore sees every slot below
// its n as the writer wrote it before that store; the writer never writes a
// slot below the published n again (a dead slot stays dead until the leaf is
// copied, and the copy is reclaimed through epochs like any replaced node),
// so those slots cannot tear.  One exception: a dead slot whose range comes
// back exactly (Registry::revive) gets its new generation in place, with an
// atomic store, before the state that makes it live again.  Keys stay sorted across all sixteen slots at
// every instant (a slot is appended only at or after the last used key, and
// unused ones hold ~0), so the count of keys <= p, clamped to the reader's
// n, is that of its snapshot even where the next slot is being written.
// Slot 0 of a leaf other than the leftmost is never dead: a gap before it
// would begin in the leaf on the left, which a reader does not see.
struct alignas(512) Leaf {
    std::uintptr_t key[kLeafKeys];  // bases, sorted; unused ones hold ~0
    std::uintptr_t last[kLeafKeys];
    std::uint64_t tag[kLeafKeys];
    std::int32_t device[kLeafKeys];
    std::uint16_t n;     // slots used: the state word's low half
    std::uint16_t dead;  // its high half; 0 in every leaf the writer builds
    std::uint8_t fresh;
};
static_assert(sizeof(Inner) == 1024 && sizeof(Leaf) == 512);
static_assert(offsetof(Leaf, n) % 4 == 0 && offsetof(Leaf, dead) == offsetof(Leaf, n) + 2);

// The state word of a leaf as one value: n | dead << 16.
using StateWord [[gnu::may_alias]] = std::uint32_t;
[[gnu::always_inline]] inline std::uint32_t load_state(const Leaf* l) noexcept {
    return __atomic_load_n(reinterpret_cast<const StateWord*>(&l->n), __ATOMIC_ACQUIRE);
}
[[gnu::always_inline]] inline void publish_state(Leaf* l, std::uint32_t n, std::uint32_t dead) noexcept {
    __atomic_store_n(reinterpret_cast<StateWord*>(&l->n), n | dead << 16, __ATOMIC_RELEASE);
}
// The slots of a state that hold a range.
[[gnu::always_inline]] inline std::uint32_t live_mask(std::uint32_t state) noexcept {
    return ~(state >> 16) & ((1u << (state & 0xffff)) - 1);
}
// One entry as the writer handles it.
struct Flat {
    std::uintptr_t base, last;
    std::uint64_t tag;
    std::int32_t device;
};

// Number of the N sorted keys at a that are <= x: a branchless binary search
// unrolled at compile time (each step a compare and a cmov).
template <std::size_t N>
[[gnu::always_inline]] inline const std::uintptr_t* step(const std::uintptr_t* b, std::uintptr_t x) noexcept {
    if constexpr (N <= 1) {
        return b;
    } else {
        constexpr std::size_t half = N / 2;
#if defined(__x86_64__)
        // GCC turns the unrolled select into a branch, which random
        // addresses mispredict half the time; force the cmov.
        const std::uintptr_t* up = b + half;
        asm("cmpq %[k], %[x]\n\tcmovaeq %[up], %[b]"
            : [b] "+r"(b)
            : [k] "r"(__atomic_load_n(up, __ATOMIC_RELAXED)), [x] "r"(x), [up] "r"(up)
            : "cc");
#else
        b += half & (std::size_t{0} - static_cast<std::size_t>(__atomic_load_n(&b[half], __ATOMIC_RELAXED) <= x));
#endif
        return step<N - half>(b, x);
    }
}
template <std::size_t N>
[[gnu::always_inline]] inline std::size_t count_le(const std::uintptr_t* a, std::uintptr_t x) noexcept {
    const std::uintptr_t* b = step<N>(a, x);
    // Atomic: the key after a leaf's used slots may be being written.
    return static_cast<std::size_t>(b - a) + (__atomic_load_n(b, __ATOMIC_RELAXED) <= x);
}
// The same, clamped to the keys in use (unused ones are ~0 and would count
// for x == ~0).
template <std::size_t N>
[[gnu::always_inline]] inline std::size_t rank(const std::uintptr_t* a, std::size_t n, std::uintptr_t x) noexcept {
    std::size_t c = count_le<N>(a, x);
    return c < n ? c : n;
}
// The search below a published root (memtype/lookup.cc), chosen for this CPU
// at the first lookup: AVX-512, AVX2 or scalar.  root is root_'s value.
using FindFn = Info (*)(std::uintptr_t root, std::uintptr_t p, std::size_t length, bool* spans) noexcept;
extern std::atomic<FindFn> g_find;
enum class Isa : int { scalar = 0, avx2 = 1, avx512 = 2 };
// The writer's search in an interior node: the number of its keys <= p
// (clamped to its n), with the compares of the search the lookups use.
std::size_t writer_rank(const Inner* in, std::uintptr_t p) noexcept;
// Tests and benchmarks: use this search from now on; false (nothing
// changed) where the CPU lacks it.
bool use_isa(Isa isa) noexcept;
Isa current_isa() noexcept;
inline std::size_t span_length(std::uintptr_t lo, std::uintptr_t hi) noexcept {
    std::uintptr_t d = hi - lo;
    return d == kTop ? ~std::size_t{0} : static_cast<std::size_t>(d + 1);
}
}  // namespace detail

class alignas(machine::kCacheLine) Registry {
public:
    Registry();
    ~Registry();  // no reader may be running
    Registry(const Registry&) = delete;
    Registry& operator=(const Registry&) = delete;

    // The process-wide registry the hooks feed (never destroyed).
    static Registry& global();

    // Registers [base, base+length) with this type; the parts of existing
    // ranges it overlaps are replaced.  length 0 does nothing.  Returns the
    // new range's generation (0 when nothing was inserted).  Throws
    // std::bad_alloc with the registry unchanged.
    std::uint64_t insert(std::uintptr_t base, std::size_t length, Type type, int device);
    // Forgets [base, base+length); a range partly inside is cut (split if the
    // hole is in its middle).  length 0 does nothing.
    void remove(std::uintptr_t base, std::size_t length);
    // Forgets the range that starts exactly at base, if there is one (a
    // free): one search under the writer lock, with no lookup before it.
    // Returns whether it did, and *was: what the range was.
    bool remove_range_at(std::uintptr_t base, Info* was);
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
    std::size_t memory_bytes() const noexcept;  // bytes of the nodes readers can reach
    std::size_t held_bytes() const noexcept;    // everything the pools hold (live, retired, free)
    std::vector<Info> entries() const;          // a copy, in address order

private:
    using Flat = detail::Flat;
    struct Split {
        std::uintptr_t sep;
        void* right;  // nullptr: no split
    };
    struct Batch {
        std::uint64_t epoch;
        std::vector<void*> nodes;
    };
    static constexpr std::uintptr_t kHeightMask = detail::kHeightMask;

    // Update, writer side (registry.cc).
    void edit(std::uintptr_t base, std::uintptr_t last, const Flat* add);
    // The way down to a leaf, for an update that stays in it.
    struct LeafPath {
        detail::Leaf* leaf;
        detail::Inner* parent;  // nullptr: the leaf is the root
        detail::Inner* grand;
        std::size_t slot, gslot;  // of the leaf in parent, of parent in grand
        bool leftmost;
        std::uintptr_t height;
    };
    bool leaf_for(std::uintptr_t base, std::uintptr_t last, LeafPath* at) const;
    bool edit_one_leaf(std::uintptr_t base, std::uintptr_t last, const Flat* add);
    bool edit_in_place(const LeafPath& at, std::uintptr_t base, std::uintptr_t last, const Flat* add);
    bool edit_by_copy(const LeafPath& at, std::uintptr_t base, std::uintptr_t last, const Flat* add);
    bool revive(detail::Leaf* l, std::uint32_t live, const Flat& e);
    void remove_first(const detail::Leaf* l, const detail::Leaf* published, const detail::Inner* parent,
                      std::size_t slot, detail::Inner* grand, std::size_t gslot, std::uintptr_t height);
    void edit_tree(std::uintptr_t base, std::uintptr_t last, const Flat* add);
    void collect(const void* node, unsigned h, std::uintptr_t base, std::uintptr_t last);
    void tx_insert(const Flat& e);
    void tx_erase(std::uintptr_t key);
    Split insert_rec(void* node, unsigned h, const Flat& e, bool leftmost, bool rightmost);
    bool spill_right(detail::Inner* in, std::size_t c, const Flat& e);
    Split split_leaf(detail::Leaf* l, std::size_t pos, const Flat& e, bool leftmost, bool rightmost);
    Split split_inner(detail::Inner* in, std::size_t pos, std::uintptr_t sep, void* right);
    void erase_rec(void* node, unsigned h, std::uintptr_t key);
    void rebalance(detail::Inner* in, std::size_t c, unsigned child_h);
    void rebalance_leaves(detail::Inner* in, std::size_t i);
    void rebalance_inners(detail::Inner* in, std::size_t i);
    void commit();
    void rollback();
    // Node ownership within one update.
    detail::Leaf* own_leaf(const void* node);
    detail::Inner* own_inner(const void* node);
    void* own(const void* node, unsigned h) {
        return h ? static_cast<void*>(own_inner(node)) : static_cast<void*>(own_leaf(node));
    }
    void drop(const void* node, unsigned h);
    detail::Leaf* new_leaf();
    detail::Inner* new_inner();
    // Pools and reclamation.
    void* pool_get(bool leaf);
    void pool_put(void* tagged);
    void retire(const void* node, bool leaf);
    void reclaim(bool force);
    void retire_tree(const void* node, unsigned h);

    // What every lookup reads, alone on its cache line: the writer's own
    // state (the lock, counters, pools) below changes on every update, and a
    // line the writer stores to costs each reader a miss on its next lookup.
    alignas(machine::kCacheLine) EpochDomain* dom_;  // the process-wide reader slots
    std::atomic<std::uintptr_t> root_;
    alignas(machine::kCacheLine) std::atomic<std::size_t> count_{0};
    std::atomic<std::size_t> live_bytes_{0};
    std::atomic<std::size_t> held_bytes_{0};
    // The writer lock: a futex word (host/futex_mutex.h), one compare-and-swap
    // to take and one exchange to give back, inline; std::mutex went through
    // pthread_mutex_lock/unlock and their checks of the mutex type.
    host::FutexMutex write_mu_;
    std::uint64_t next_generation_ = 1;
    // The update in progress: the tree it builds, what it allocated, what it
    // unlinks from the published tree, and what it built then discarded.
    void* work_root_ = nullptr;
    unsigned work_height_ = 0;
    std::ptrdiff_t work_count_ = 0;
    std::vector<void*> fresh_, replaced_, dropped_;
    std::vector<Flat> overlap_;
    // Pools: free blocks linked through their first word; slabs freed with
    // the registry.
    void* free_[2] = {nullptr, nullptr};  // [0] inner, [1] leaf
    std::vector<void*> slabs_;
    // Unlinked nodes waiting for readers (tagged: low bit set for leaves).
    std::vector<void*> pending_;
    std::size_t pending_bytes_ = 0;
    std::size_t next_try_bytes_ = 0;  // pending bytes at which to read the clock again
    std::chrono::steady_clock::time_point last_round_{};
    std::vector<Batch> batches_;
};

const char* type_name(Type t);

[[gnu::always_inline]] inline Info Registry::lookup(std::uintptr_t p) const noexcept { return lookup(p, 1, nullptr); }

[[gnu::always_inline]] inline Info Registry::lookup(std::uintptr_t p, std::size_t length, bool* spans) const noexcept {
    EpochDomain::Guard guard(*dom_);
    return detail::g_find.load(std::memory_order_relaxed)(root_.load(std::memory_order_acquire), p, length, spans);
}

}  // namespace ldshim::memtype
