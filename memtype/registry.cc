#include "memtype/registry.h"

#include "memtype/epoch.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>

namespace ldshim::memtype {

namespace {
using detail::Inner;
using detail::kInnerKeys;
using detail::kLeafKeys;
using detail::kTop;
using detail::Leaf;
using detail::span_length;

// A non-root leaf keeps at least this many entries, an interior node at least
// this many children; merges and redistribution keep them there.
constexpr std::size_t kLeafMin = 5;
constexpr std::size_t kInnerMinChildren = 4;
constexpr std::size_t kSlab = 64 << 10;

constexpr Leaf make_empty_leaf() {
    Leaf l{};
    for (auto& k : l.key) k = kTop;
    return l;
}
// The empty tree: one shared leaf that is never freed nor counted.
constinit const Leaf kEmptyLeaf = make_empty_leaf();

std::size_t node_bytes(bool leaf) { return leaf ? sizeof(Leaf) : sizeof(Inner); }
bool is_leaf_tag(const void* tagged) { return (reinterpret_cast<std::uintptr_t>(tagged) & 1) != 0; }
void* untag(void* tagged) {
    return reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(tagged) & ~std::uintptr_t{1});
}
void* tag_node(const void* node, bool leaf) {
    return reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(node) | (leaf ? 1 : 0));
}

// Adds to a counter only the writer changes (under the writer lock): a load
// and a store, not a locked read-modify-write, which would wait for the
// update's stores to drain first.  Readers load it relaxed.
void bump(std::atomic<std::size_t>& c, std::size_t by) {
    c.store(c.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
}

// The writer's searches.  A few keys are counted one after another: the
// compares are independent of each other, so the processor runs them side
// by side, where the lookup's scalar binary search is a chain of dependent
// loads (a quarter of an update's time).  A fuller interior node is
// compared with the vector search the lookups use (detail::writer_rank).
std::size_t count_le_n(const std::uintptr_t* k, std::size_t n, std::uintptr_t x) {
    std::size_t c = 0;
    for (std::size_t i = 0; i < n; ++i) c += static_cast<std::size_t>(k[i] <= x);
    return c;
}
std::size_t leaf_rank(const Leaf* l, std::uintptr_t x) { return count_le_n(l->key, l->n, x); }
std::size_t inner_rank(const Inner* in, std::uintptr_t x) {
    return in->n <= kLeafKeys ? count_le_n(in->key, in->n, x) : detail::writer_rank(in, x);
}
const void* child_at(const Inner* in, std::size_t c) { return __atomic_load_n(&in->child[c], __ATOMIC_ACQUIRE); }
}  // namespace

// ---- leaf and interior node primitives (on nodes the update owns) ----------

namespace {
using detail::Flat;

Flat get(const Leaf* l, std::size_t i) { return {l->key[i], l->last[i], l->tag[i], l->device[i]}; }
void put(Leaf* l, std::size_t i, const Flat& f) {
    l->key[i] = f.base;
    l->last[i] = f.last;
    l->tag[i] = f.tag;
    l->device[i] = f.device;
}
// Moves entries [from, n) by `by` slots (negative: to the left).
void leaf_shift(Leaf* l, std::size_t from, std::ptrdiff_t by) {
    std::size_t cnt = l->n - from;
    auto to = static_cast<std::size_t>(static_cast<std::ptrdiff_t>(from) + by);
    std::memmove(&l->key[to], &l->key[from], cnt * sizeof l->key[0]);
    std::memmove(&l->last[to], &l->last[from], cnt * sizeof l->last[0]);
    std::memmove(&l->tag[to], &l->tag[from], cnt * sizeof l->tag[0]);
    std::memmove(&l->device[to], &l->device[from], cnt * sizeof l->device[0]);
}
void leaf_pad(Leaf* l) {
    for (std::size_t i = l->n; i < kLeafKeys; ++i) l->key[i] = kTop;
}
// Whether more than k bits of m are set (the library is built for baseline
// x86-64, where a popcount is a call into libgcc).
bool more_than(std::uint32_t m, std::size_t k) {
    for (std::size_t i = 0; i < k && m; ++i) m &= m - 1;
    return m != 0;
}
// dst = src's live slots, in order, as a leaf the writer builds (no dead
// slot, unused keys ~0); dst->fresh is left to the caller.
void compact(Leaf* dst, const Leaf* src) {
    std::uint32_t live = detail::live_mask(src->n | std::uint32_t{src->dead} << 16);
    std::size_t k = 0;
    for (; live; live &= live - 1) put(dst, k++, get(src, static_cast<std::size_t>(__builtin_ctz(live))));
    dst->n = static_cast<std::uint16_t>(k);
    dst->dead = 0;
    leaf_pad(dst);
}
void inner_pad(Inner* in) {
    for (std::size_t i = in->n; i < kInnerKeys; ++i) in->key[i] = kTop;
}
// Inserts key at pos and child at pos + 1.
void inner_insert_at(Inner* in, std::size_t pos, std::uintptr_t key, const void* child) {
    std::size_t n = in->n;
    std::memmove(&in->key[pos + 1], &in->key[pos], (n - pos) * sizeof in->key[0]);
    std::memmove(&in->child[pos + 2], &in->child[pos + 1], (n - pos) * sizeof in->child[0]);
    in->key[pos] = key;
    in->child[pos + 1] = child;
    in->n = static_cast<std::uint16_t>(n + 1);
}
// Removes key[pos] and child[pos + 1].
void inner_erase_at(Inner* in, std::size_t pos) {
    std::size_t n = in->n;
    std::memmove(&in->key[pos], &in->key[pos + 1], (n - pos - 1) * sizeof in->key[0]);
    std::memmove(&in->child[pos + 1], &in->child[pos + 2], (n - pos - 1) * sizeof in->child[0]);
    in->n = static_cast<std::uint16_t>(n - 1);
    in->key[n - 1] = kTop;
    in->child[n] = nullptr;
}
std::uintptr_t min_key(const void* node, unsigned h) {
    for (; h > 0; --h) node = child_at(static_cast<const Inner*>(node), 0);
    return static_cast<const Leaf*>(node)->key[0];
}
}  // namespace

// ---- construction, pools, reclamation ----------------------------------------

Registry::Registry() : dom_(&EpochDomain::instance()), root_(reinterpret_cast<std::uintptr_t>(&kEmptyLeaf)) {}

Registry::~Registry() {
    for (void* s : slabs_) std::free(s);
}

namespace {
std::atomic<Registry*> g_global{nullptr};  // once built (lib/fork_handlers.cc)
}  // namespace

Registry& Registry::global() {
    // Never destroyed: hooks may look up and update from any thread until the
    // process is gone, after static destructors have run.
    alignas(Registry) static unsigned char storage[sizeof(Registry)];
    static Registry* r = [] {
        auto* g = new (storage) Registry();
        g_global.store(g, std::memory_order_release);
        return g;
    }();
    return *r;
}

Registry* Registry::existing_global() { return g_global.load(std::memory_order_acquire); }

// A free block's first word links it to the next; blocks are carved from
// 64 KiB slabs, so an update allocates from the system once per slab.
void* Registry::pool_get(bool leaf) {
    void*& head = free_[leaf ? 1 : 0];
    if (!head) {
        slabs_.push_back(nullptr);  // may throw, before anything is allocated
        void* slab = std::aligned_alloc(4096, kSlab);
        if (!slab) {
            slabs_.pop_back();
            throw std::bad_alloc();
        }
        slabs_.back() = slab;
        bump(held_bytes_, kSlab);
        std::size_t sz = node_bytes(leaf);
        for (std::size_t off = kSlab; off >= sz; off -= sz) {
            void* b = static_cast<char*>(slab) + off - sz;
            *static_cast<void**>(b) = head;
            head = b;
        }
    }
    void* b = head;
    head = *static_cast<void**>(b);
    return b;
}

void Registry::pool_put(void* tagged) {
    void* b = untag(tagged);
    void*& head = free_[is_leaf_tag(tagged) ? 1 : 0];
    *static_cast<void**>(b) = head;
    head = b;
}

Leaf* Registry::new_leaf() {
    fresh_.reserve(fresh_.size() + 1);  // so that recording it cannot throw
    auto* l = static_cast<Leaf*>(pool_get(true));
    fresh_.push_back(tag_node(l, true));
    l->dead = 0;
    l->fresh = 1;
    return l;
}

Inner* Registry::new_inner() {
    fresh_.reserve(fresh_.size() + 1);
    auto* in = static_cast<Inner*>(pool_get(false));
    fresh_.push_back(tag_node(in, false));
    in->fresh = 1;
    return in;
}

Leaf* Registry::own_leaf(const void* node) {
    const auto* l = static_cast<const Leaf*>(node);
    if (l->fresh) return const_cast<Leaf*>(l);
    replaced_.reserve(replaced_.size() + 1);
    Leaf* c = new_leaf();
    if (l->dead)
        compact(c, l);  // the tree path works on leaves without dead slots
    else
        std::memcpy(static_cast<void*>(c), l, sizeof(Leaf));
    c->fresh = 1;
    if (l != &kEmptyLeaf) replaced_.push_back(tag_node(l, true));
    return c;
}

Inner* Registry::own_inner(const void* node) {
    const auto* in = static_cast<const Inner*>(node);
    if (in->fresh) return const_cast<Inner*>(in);
    replaced_.reserve(replaced_.size() + 1);
    Inner* c = new_inner();
    std::memcpy(static_cast<void*>(c), in, sizeof(Inner));
    c->fresh = 1;
    replaced_.push_back(tag_node(in, false));
    return c;
}

// A node leaves the tree being built: freed at commit if this update made it,
// retired if readers may hold it.
void Registry::drop(const void* node, unsigned h) {
    bool leaf = h == 0;
    bool fresh = leaf ? static_cast<const Leaf*>(node)->fresh : static_cast<const Inner*>(node)->fresh;
    if (leaf && node == &kEmptyLeaf) return;
    (fresh ? dropped_ : replaced_).push_back(tag_node(node, leaf));
}

void Registry::retire(const void* node, bool leaf) {
    if (node == &kEmptyLeaf) return;
    pending_.push_back(tag_node(node, leaf));
    pending_bytes_ += node_bytes(leaf);
}

// Frees what no reader can still see.  Each round costs every reading thread
// an interrupt (membarrier), so unlinked nodes wait in batches: a round runs
// once they exceed 256 KiB or half the live tree, and, while less than 1 MiB
// waits, at most once a millisecond (a small tree under a fast writer would
// otherwise interrupt readers thousands of times a second).  The clock is
// read again only after another eighth of a batch.
void Registry::reclaim(bool force) {
    std::size_t batch = std::max<std::size_t>(256 << 10, live_bytes_.load(std::memory_order_relaxed) / 2);
    if (!force && pending_bytes_ < std::max(batch, next_try_bytes_)) return;
    auto now = std::chrono::steady_clock::now();
    if (!force && pending_bytes_ < (1 << 20) && now - last_round_ < std::chrono::milliseconds(1)) {
        next_try_bytes_ = pending_bytes_ + batch / 8;
        return;
    }
    last_round_ = now;
    next_try_bytes_ = 0;
    if (!pending_.empty()) {
        batches_.push_back({dom_->advance(), {}});  // everything pending was unlinked before this epoch ended
        batches_.back().nodes.swap(pending_);
        pending_bytes_ = 0;
    }
    if (batches_.empty()) return;
    std::uint64_t oldest = dom_->oldest_reader();
    std::size_t freed = 0;
    while (freed < batches_.size() && batches_[freed].epoch < oldest) {
        for (void* b : batches_[freed].nodes) pool_put(b);
        ++freed;
    }
    if (freed == 0) return;
    // Keep one emptied vector's capacity for the next batch.
    if (pending_.capacity() == 0) {
        batches_[0].nodes.clear();
        pending_.swap(batches_[0].nodes);
    }
    batches_.erase(batches_.begin(), batches_.begin() + static_cast<std::ptrdiff_t>(freed));
}

// ---- reading -------------------------------------------------------------

std::size_t Registry::size() const noexcept { return count_.load(std::memory_order_relaxed); }

std::size_t Registry::memory_bytes() const noexcept { return live_bytes_.load(std::memory_order_relaxed); }

std::size_t Registry::held_bytes() const noexcept { return held_bytes_.load(std::memory_order_relaxed); }

namespace {
void walk(const void* node, unsigned h, std::vector<Info>& out) {
    if (h == 0) {
        const auto* l = static_cast<const Leaf*>(node);
        for (std::uint32_t live = detail::live_mask(detail::load_state(l)); live; live &= live - 1) {
            auto i = static_cast<std::size_t>(__builtin_ctz(live));
            std::uint64_t tag = __atomic_load_n(&l->tag[i], __ATOMIC_RELAXED);  // see Registry::revive
            out.push_back(
                {static_cast<Type>(tag & 0xff), l->device[i], l->key[i], span_length(l->key[i], l->last[i]), tag >> 8});
        }
        return;
    }
    const auto* in = static_cast<const Inner*>(node);
    for (std::size_t c = 0; c <= in->n; ++c) walk(child_at(in, c), h - 1, out);
}
}  // namespace

std::vector<Info> Registry::entries() const {
    std::vector<Info> out;
    EpochDomain::Guard guard(*dom_);
    std::uintptr_t r = root_.load(std::memory_order_acquire);
    walk(reinterpret_cast<const void*>(r & ~kHeightMask), static_cast<unsigned>(r & kHeightMask), out);
    return out;
}

// ---- updates ---------------------------------------------------------------

std::uint64_t Registry::insert(std::uintptr_t base, std::size_t length, Type type, int device) {
    if (length == 0) return 0;
    std::uintptr_t last = length - 1 > kTop - base ? kTop : base + (length - 1);
    std::lock_guard<host::FutexMutex> lock(write_mu_);
    dom_->prepare_writer();
    std::uint64_t gen = next_generation_;
    Flat add{base, last, gen << 8 | static_cast<std::uint8_t>(type), device};
    edit(base, last, &add);
    ++next_generation_;  // only once the range is in
    return gen;
}

void Registry::remove(std::uintptr_t base, std::size_t length) {
    if (length == 0) return;
    std::uintptr_t last = length - 1 > kTop - base ? kTop : base + (length - 1);
    std::lock_guard<host::FutexMutex> lock(write_mu_);
    dom_->prepare_writer();
    edit(base, last, nullptr);
}

bool Registry::remove_range_at(std::uintptr_t base, Info* was) {
    std::lock_guard<host::FutexMutex> lock(write_mu_);
    LeafPath at;
    leaf_for(base, base, &at);  // a range of one address stays in its leaf
    const Leaf* l = at.leaf;
    std::size_t c = leaf_rank(l, base);
    // The last slot with that base is the only one that can be live.
    if (c == 0 || l->key[c - 1] != base || (l->dead >> (c - 1) & 1)) return false;
    Flat e = get(l, c - 1);
    *was = {static_cast<Type>(e.tag & 0xff), e.device, e.base, span_length(e.base, e.last), e.tag >> 8};
    dom_->prepare_writer();
    if (!edit_in_place(at, e.base, e.last, nullptr)) edit(e.base, e.last, nullptr);
    return true;
}

void Registry::retire_tree(const void* node, unsigned h) {
    if (h > 0) {
        const auto* in = static_cast<const Inner*>(node);
        for (std::size_t c = 0; c <= in->n; ++c) retire_tree(in->child[c], h - 1);
    }
    retire(node, h == 0);
}

void Registry::clear() {
    std::lock_guard<host::FutexMutex> lock(write_mu_);
    // Room to retire every node (at most live / 256 of them) before unlinking them.
    pending_.reserve(pending_.size() + live_bytes_.load(std::memory_order_relaxed) / sizeof(Inner) + 1);
    std::uintptr_t r = root_.load(std::memory_order_relaxed);
    root_.store(reinterpret_cast<std::uintptr_t>(&kEmptyLeaf), std::memory_order_release);
    retire_tree(reinterpret_cast<const void*>(r & ~kHeightMask), static_cast<unsigned>(r & kHeightMask));
    count_.store(0, std::memory_order_relaxed);
    live_bytes_.store(0, std::memory_order_relaxed);
    reclaim(true);
}

void Registry::edit(std::uintptr_t base, std::uintptr_t last, const Flat* add) {
    if (!edit_one_leaf(base, last, add)) edit_tree(base, last, add);
    reclaim(false);
}

namespace {
// The entries of l with [base, last] cut out and `add` put in, into out
// (room for kLeafKeys + 2).  Returns the count; *changed says whether
// anything differs from l.
std::size_t splice(const Leaf* l, std::uintptr_t base, std::uintptr_t last, const Flat* add, Flat* out, bool* changed) {
    std::size_t k = 0;
    bool added = false;
    *changed = add != nullptr;
    for (std::size_t i = 0; i < l->n; ++i) {
        Flat e = get(l, i);
        if (add && !added && e.base > last) {
            out[k++] = *add;
            added = true;
        }
        if (e.last < base || e.base > last) {
            out[k++] = e;
            continue;
        }
        *changed = true;
        if (e.base < base) out[k++] = {e.base, base - 1, e.tag, e.device};
        if (add && !added) {
            out[k++] = *add;
            added = true;
        }
        if (e.last > last) out[k++] = {last + 1, e.last, e.tag, e.device};
    }
    if (add && !added) out[k++] = *add;
    return k;
}

// nl = l with e let in at position c (l has room), or with entry j left
// out: its columns copied with one element shifted, branch-free, padding
// keys (~0) included.
const Leaf* leaf_with(Leaf* nl, const Leaf* l, std::size_t c, const Flat& e) {
    for (std::size_t i = 0; i < kLeafKeys; ++i) {
        std::size_t from = i - static_cast<std::size_t>(i > c);
        nl->key[i] = l->key[from];
        nl->last[i] = l->last[from];
        nl->tag[i] = l->tag[from];
        nl->device[i] = l->device[from];
    }
    put(nl, c, e);
    nl->n = static_cast<std::uint16_t>(l->n + 1);
    nl->dead = 0;
    nl->fresh = 0;
    return nl;
}
const Leaf* leaf_without(Leaf* nl, const Leaf* l, std::size_t j) {
    for (std::size_t i = 0; i < kLeafKeys; ++i) {
        std::size_t from = i + static_cast<std::size_t>(i >= j);
        from = from < kLeafKeys ? from : kLeafKeys - 1;
        nl->key[i] = l->key[from];
        nl->last[i] = l->last[from];
        nl->tag[i] = l->tag[from];
        nl->device[i] = l->device[from];
    }
    nl->n = static_cast<std::uint16_t>(l->n - 1);
    nl->key[nl->n] = kTop;
    nl->dead = 0;
    nl->fresh = 0;
    return nl;
}
}  // namespace

// The leaf whose key range holds base, and the way down to it; false when
// [base, last] reaches past that leaf's subtree.
bool Registry::leaf_for(std::uintptr_t base, std::uintptr_t last, LeafPath* at) const {
    std::uintptr_t r = root_.load(std::memory_order_relaxed);
    const void* node = reinterpret_cast<const void*>(r & ~kHeightMask);
    *at = {};
    at->height = r & kHeightMask;
    at->leftmost = true;
    for (std::uintptr_t h = at->height; h > 0; --h) {
        auto* in = static_cast<Inner*>(const_cast<void*>(node));
        std::size_t c = inner_rank(in, base);
        if (c < in->n && last >= in->key[c]) return false;  // reaches the next subtree
        at->leftmost = at->leftmost && c == 0;
        at->grand = at->parent;
        at->gslot = at->slot;
        at->parent = in;
        at->slot = c;
        node = in->child[c];
    }
    at->leaf = static_cast<Leaf*>(const_cast<void*>(node));
    return true;
}

// The common update: everything it changes lies in one leaf, which keeps its
// first key (or is the leftmost) and stays between the fill bounds.  It is
// made in place where it can be, else the rebuilt leaf replaces the old one
// with one store into its parent's slot, so the rest of the published tree
// -- and readers' caches of it -- stay.
bool Registry::edit_one_leaf(std::uintptr_t base, std::uintptr_t last, const Flat* add) {
    LeafPath at;
    if (!leaf_for(base, last, &at)) return false;
    return edit_in_place(at, base, last, add) || edit_by_copy(at, base, last, add);
}

// The one-leaf update as a copy of the leaf.  Apart from the in-place
// paths, so that they do not pay for this one's stack frame.
[[gnu::noinline]] bool Registry::edit_by_copy(const LeafPath& at, std::uintptr_t base, std::uintptr_t last,
                                              const Flat* add) {
    Leaf* const published = at.leaf;
    Inner* const parent = at.parent;
    const bool leftmost = at.leftmost;
    // The copies below are built from the leaf's live slots.
    Leaf dense;
    const Leaf* l = published;
    if (published->dead) {
        compact(&dense, published);
        l = &dense;
    }
    // Next most common: a range put into a gap, or one entry removed exactly
    // (leaf_with, leaf_without); anything else goes through splice.
    const std::size_t n0 = l->n;
    const std::size_t c = leaf_rank(l, base);
    std::size_t n;
    const void* fresh = &kEmptyLeaf;
    if (add && (c == 0 || l->last[c - 1] < base) && (c == n0 || l->key[c] > last)) {
        n = n0 + 1;
        if (n > kLeafKeys || (!leftmost && c == 0)) return false;  // a split, or a separator would change
        pending_.reserve(pending_.size() + 1);                     // retiring the old leaf cannot fail once published
        fresh = leaf_with(static_cast<Leaf*>(pool_get(true)), l, c, *add);
    } else if (!add && c > 1 - static_cast<std::size_t>(leftmost) && n0 > 1 && l->key[c - 1] == base &&
               l->last[c - 1] == last) {
        // Entry c - 1 goes (not the first of a leaf with a separator in
        // front of it, nor the last one of the root leaf).
        n = n0 - 1;
        if (parent && n < kLeafMin) return false;  // a merge
        pending_.reserve(pending_.size() + 1);
        fresh = leaf_without(static_cast<Leaf*>(pool_get(true)), l, c - 1);
    } else if (!add && c == 1 && at.slot > 0 && n0 > kLeafMin && l->key[0] == base && l->last[0] == last) {
        // The leaf's first range goes, as when frees come in allocation
        // order: the separator in front of it changes too.
        remove_first(l, published, parent, at.slot, at.grand, at.gslot, at.height);
        return true;
    } else {
        Flat out[kLeafKeys + 2];
        bool changed = false;
        n = splice(l, base, last, add, out, &changed);
        if (!changed) return true;  // removing a gap
        if (n > kLeafKeys || (parent && n < kLeafMin)) return false;
        if (!leftmost && out[0].base != l->key[0]) return false;  // a separator would change
        pending_.reserve(pending_.size() + 1);
        if (n > 0) {
            Leaf* nl = static_cast<Leaf*>(pool_get(true));
            for (std::size_t i = 0; i < n; ++i) put(nl, i, out[i]);
            nl->n = static_cast<std::uint16_t>(n);
            nl->dead = 0;
            nl->fresh = 0;
            leaf_pad(nl);
            fresh = nl;
        }
    }
    if (parent)
        __atomic_store_n(&parent->child[at.slot], fresh, __ATOMIC_RELEASE);
    else
        root_.store(reinterpret_cast<std::uintptr_t>(fresh), std::memory_order_release);
    bump(live_bytes_, (n > 0 ? sizeof(Leaf) : 0) - (published != &kEmptyLeaf ? sizeof(Leaf) : 0));
    bump(count_, n - l->n);
    retire(published, true);
    return true;
}

// An update the leaf takes in place (see Leaf for why readers stay right):
// a range that was freed from this leaf comes back, its slot made live
// again; a range after every slot used goes into the next free slot; one
// live range removed exactly is marked dead.  None applies to the shared
// empty leaf, to slot 0 of a leaf with a separator in front of it, nor where
// a leaf other than the root would keep fewer than kLeafMin ranges (a merge).
bool Registry::edit_in_place(const LeafPath& at, std::uintptr_t base, std::uintptr_t last, const Flat* add) {
    Leaf* const l = at.leaf;
    const std::uint32_t n = l->n;
    const std::uint32_t live = detail::live_mask(n | std::uint32_t{l->dead} << 16);
    if (add) {
        if (n == 0) return false;
        if (revive(l, live, *add)) return true;
        if (n == kLeafKeys || l->key[n - 1] > base) return false;
        if (live && l->last[31 - __builtin_clz(live)] >= base) return false;  // overlaps the last live range
        l->last[n] = add->last;
        l->tag[n] = add->tag;
        l->device[n] = add->device;
        __atomic_store_n(&l->key[n], add->base, __ATOMIC_RELAXED);  // readers may load it before the state says so
        detail::publish_state(l, n + 1, l->dead);
        bump(count_, 1);
        return true;
    }
    const std::size_t c = leaf_rank(l, base);
    if (c == 0 || !(live >> (c - 1) & 1) || l->key[c - 1] != base || l->last[c - 1] != last) return false;
    if (c == 1 && !at.leftmost) return false;
    if (at.parent && !more_than(live, kLeafMin)) return false;
    detail::publish_state(l, n, l->dead | 1u << (c - 1));
    bump(count_, ~std::size_t{0});
    return true;
}

// The same range as a dead slot's -- base, end, type, device: what a free
// then the same allocation gives -- comes back to that slot with its new
// generation.  The slot must be the last one whose key is <= the range's
// end: a later key inside it would split it for readers.  No live range
// before the slot can reach it: that one was live when this slot was
// written (the append would have been refused) or was revived since (this
// slot's key inside it would have refused that).  A reader that loaded a
// state from before the free may read either generation of the same range,
// both true.
bool Registry::revive(Leaf* l, std::uint32_t live, const Flat& e) {
    const std::size_t c = leaf_rank(l, e.last);
    if (c == 0) return false;
    const std::size_t j = c - 1;
    if ((live >> j & 1) || l->key[j] != e.base || l->last[j] != e.last || l->device[j] != e.device ||
        (l->tag[j] & 0xff) != (e.tag & 0xff))
        return false;
    __atomic_store_n(&l->tag[j], e.tag, __ATOMIC_RELAXED);  // readers of an older state may load it
    detail::publish_state(l, l->n, l->dead & ~(1u << j));
    bump(count_, 1);
    return true;
}

// Removes the first range of leaf l (the live slots of `published`, the leaf
// readers see), child `slot` (> 0) of parent, which
// keeps at least kLeafMin: a copy of the parent with the next range's base
// as the separator in front of the new leaf replaces it with one store into
// the grandparent's slot (or the root), without the general path's
// bookkeeping.
void Registry::remove_first(const Leaf* l, const Leaf* published, const Inner* parent, std::size_t slot, Inner* grand,
                            std::size_t gslot, std::uintptr_t height) {
    pending_.reserve(pending_.size() + 2);  // retiring cannot fail once published
    auto* np = static_cast<Inner*>(pool_get(false));
    Leaf* nl = nullptr;
    try {
        nl = static_cast<Leaf*>(pool_get(true));
    } catch (...) {
        pool_put(tag_node(np, false));
        throw;
    }
    leaf_without(nl, l, 0);
    std::memcpy(static_cast<void*>(np), parent, sizeof(Inner));
    np->key[slot - 1] = nl->key[0];
    np->child[slot] = nl;
    np->fresh = 0;
    if (grand)
        __atomic_store_n(&grand->child[gslot], np, __ATOMIC_RELEASE);
    else
        root_.store(reinterpret_cast<std::uintptr_t>(np) | height, std::memory_order_release);
    bump(count_, ~std::size_t{0});  // one range fewer; as many nodes as before
    retire(published, true);
    retire(parent, false);
}

// Collects the entries that overlap [base, last] into overlap_, in order.
void Registry::collect(const void* node, unsigned h, std::uintptr_t base, std::uintptr_t last) {
    if (h == 0) {
        const auto* l = static_cast<const Leaf*>(node);
        for (std::size_t i = 0; i < l->n; ++i)
            if (!(l->dead >> i & 1) && l->key[i] <= last && l->last[i] >= base) overlap_.push_back(get(l, i));
        return;
    }
    const auto* in = static_cast<const Inner*>(node);
    std::size_t lo = inner_rank(in, base), hi = inner_rank(in, last);
    for (std::size_t c = lo; c <= hi; ++c) collect(in->child[c], h - 1, base, last);
}

// Any other update, as B+tree operations on a private copy of the path(s)
// it touches: each overlapping entry erased, its remnants and the new range
// inserted, then the new root published at once.
void Registry::edit_tree(std::uintptr_t base, std::uintptr_t last, const Flat* add) {
    std::uintptr_t r = root_.load(std::memory_order_relaxed);
    work_root_ = reinterpret_cast<void*>(r & ~kHeightMask);
    work_height_ = static_cast<unsigned>(r & kHeightMask);
    work_count_ = 0;
    overlap_.clear();
    collect(work_root_, work_height_, base, last);
    if (overlap_.empty() && !add) return;
    try {
        for (const Flat& e : overlap_) tx_erase(e.base);
        if (!overlap_.empty()) {
            const Flat& front = overlap_.front();
            const Flat& back = overlap_.back();
            if (front.base < base) tx_insert({front.base, base - 1, front.tag, front.device});
            if (back.last > last) tx_insert({last + 1, back.last, back.tag, back.device});
        }
        if (add) tx_insert(*add);
        pending_.reserve(pending_.size() + replaced_.size() + 1);  // commit cannot fail
    } catch (...) {
        rollback();  // nothing was published
        throw;
    }
    commit();
}

void Registry::tx_insert(const Flat& e) {
    void* root = own(work_root_, work_height_);
    work_root_ = root;
    Split s = insert_rec(root, work_height_, e, true, true);
    if (s.right) {
        Inner* nr = new_inner();
        nr->n = 1;
        nr->key[0] = s.sep;
        nr->child[0] = root;
        nr->child[1] = s.right;
        inner_pad(nr);
        work_root_ = nr;
        ++work_height_;
    }
    ++work_count_;
}

void Registry::tx_erase(std::uintptr_t key) {
    void* root = own(work_root_, work_height_);
    work_root_ = root;
    erase_rec(root, work_height_, key);
    // A root with one child gives way to it.
    while (work_height_ > 0 && static_cast<Inner*>(work_root_)->n == 0) {
        void* only = const_cast<void*>(static_cast<Inner*>(work_root_)->child[0]);
        drop(work_root_, work_height_);
        work_root_ = only;
        --work_height_;
    }
    --work_count_;
}

Registry::Split Registry::insert_rec(void* node, unsigned h, const Flat& e, bool leftmost, bool rightmost) {
    if (h == 0) {
        auto* l = static_cast<Leaf*>(node);
        std::size_t pos = leaf_rank(l, e.base);
        if (l->n == kLeafKeys) return split_leaf(l, pos, e, leftmost, rightmost);
        leaf_shift(l, pos, 1);
        put(l, pos, e);
        ++l->n;
        return {0, nullptr};
    }
    auto* in = static_cast<Inner*>(node);
    std::size_t c = inner_rank(in, e.base);
    if (h == 1 && spill_right(in, c, e)) return {0, nullptr};
    void* child = own(in->child[c], h - 1);
    in->child[c] = child;
    Split s = insert_rec(child, h - 1, e, leftmost && c == 0, rightmost && c == in->n);
    if (!s.right) return s;
    if (in->n < kInnerKeys) {
        inner_insert_at(in, c, s.sep, s.right);
        return {0, nullptr};
    }
    return split_inner(in, c, s.sep, s.right);
}

// An entry that would go after the last one of a full leaf goes before the
// first one of its right sibling instead, if that has room (the separator
// moves down to it).  This is what re-inserting a leaf's first range after
// removing it does; splitting there would leave two half-empty leaves.
bool Registry::spill_right(Inner* in, std::size_t c, const Flat& e) {
    const auto* l = static_cast<const Leaf*>(in->child[c]);
    if (l->n < kLeafKeys || c >= in->n || e.base < l->key[kLeafKeys - 1]) return false;
    const auto* r = static_cast<const Leaf*>(in->child[c + 1]);
    if (r->n >= kLeafKeys) return false;
    Leaf* rw = own_leaf(r);
    in->child[c + 1] = rw;
    leaf_shift(rw, 0, 1);
    put(rw, 0, e);
    ++rw->n;
    in->key[c] = e.base;
    return true;
}

// A full leaf takes e at pos and splits: evenly, or, when the tree grows at
// its right (left) end as allocators do, leaving the old leaf full.
Registry::Split Registry::split_leaf(Leaf* l, std::size_t pos, const Flat& e, bool leftmost, bool rightmost) {
    Flat all[kLeafKeys + 1];
    for (std::size_t i = 0, k = 0; k <= kLeafKeys; ++k) all[k] = k == pos ? e : get(l, i++);
    std::size_t m = (kLeafKeys + 1) / 2;
    if (rightmost && pos == kLeafKeys) m = kLeafKeys;
    if (leftmost && pos == 0) m = 1;
    Leaf* right = new_leaf();
    for (std::size_t k = 0; k < m; ++k) put(l, k, all[k]);
    for (std::size_t k = m; k <= kLeafKeys; ++k) put(right, k - m, all[k]);
    l->n = static_cast<std::uint16_t>(m);
    right->n = static_cast<std::uint16_t>(kLeafKeys + 1 - m);
    leaf_pad(l);
    leaf_pad(right);
    return {right->key[0], right};
}

// A full interior node takes (sep, right) after child pos and splits evenly.
Registry::Split Registry::split_inner(Inner* in, std::size_t pos, std::uintptr_t sep, void* right) {
    std::uintptr_t keys[kInnerKeys + 1];
    const void* kids[kInnerKeys + 2];
    for (std::size_t i = 0, k = 0; k <= kInnerKeys; ++k) keys[k] = k == pos ? sep : in->key[i++];
    for (std::size_t i = 0, k = 0; k <= kInnerKeys + 1; ++k) kids[k] = k == pos + 1 ? right : in->child[i++];
    Inner* r = new_inner();
    constexpr std::size_t m = (kInnerKeys + 1) / 2;  // keys left; keys[m] moves up
    for (std::size_t k = 0; k < m; ++k) in->key[k] = keys[k];
    for (std::size_t k = 0; k <= m; ++k) in->child[k] = kids[k];
    for (std::size_t k = m + 1; k <= kInnerKeys; ++k) r->key[k - m - 1] = keys[k];
    for (std::size_t k = m + 1; k <= kInnerKeys + 1; ++k) r->child[k - m - 1] = kids[k];
    in->n = static_cast<std::uint16_t>(m);
    r->n = static_cast<std::uint16_t>(kInnerKeys - m);
    for (std::size_t k = m + 1; k <= kInnerKeys; ++k) in->child[k] = nullptr;
    for (std::size_t k = r->n + 1; k <= kInnerKeys; ++k) r->child[k] = nullptr;
    inner_pad(in);
    inner_pad(r);
    return {keys[m], r};
}

void Registry::erase_rec(void* node, unsigned h, std::uintptr_t key) {
    if (h == 0) {
        auto* l = static_cast<Leaf*>(node);
        std::size_t pos = leaf_rank(l, key) - 1;  // the key is there
        leaf_shift(l, pos + 1, -1);
        --l->n;
        l->key[l->n] = kTop;
        return;
    }
    auto* in = static_cast<Inner*>(node);
    std::size_t c = inner_rank(in, key);
    void* child = own(in->child[c], h - 1);
    in->child[c] = child;
    erase_rec(child, h - 1, key);
    // The separator in front of the child was its smallest key: the next one
    // takes its place (an emptied leaf is merged away below instead).
    bool empty = h == 1 && static_cast<Leaf*>(child)->n == 0;
    if (c > 0 && in->key[c - 1] == key && !empty) in->key[c - 1] = min_key(child, h - 1);
    std::size_t fill = h == 1 ? static_cast<Leaf*>(child)->n : static_cast<Inner*>(child)->n + std::size_t{1};
    if (fill < (h == 1 ? kLeafMin : kInnerMinChildren)) rebalance(in, c, h - 1);
}

void Registry::rebalance(Inner* in, std::size_t c, unsigned child_h) {
    if (in->n == 0) return;             // a lone child: the root collapses onto it
    std::size_t i = c > 0 ? c - 1 : c;  // merge or share between children i and i + 1
    if (child_h == 0)
        rebalance_leaves(in, i);
    else
        rebalance_inners(in, i);
}

void Registry::rebalance_leaves(Inner* in, std::size_t i) {
    Leaf* a = own_leaf(in->child[i]);
    in->child[i] = a;
    Leaf* bw = own_leaf(in->child[i + 1]);  // without its dead slots
    in->child[i + 1] = bw;
    std::size_t total = a->n + std::size_t{bw->n};
    if (total <= kLeafKeys) {  // merge b into a
        for (std::size_t k = 0; k < bw->n; ++k) put(a, a->n + k, get(bw, k));
        a->n = static_cast<std::uint16_t>(total);
        drop(bw, 0);
        inner_erase_at(in, i);
        return;
    }
    Flat all[2 * kLeafKeys];
    for (std::size_t k = 0; k < a->n; ++k) all[k] = get(a, k);
    for (std::size_t k = 0; k < bw->n; ++k) all[a->n + k] = get(bw, k);
    std::size_t m = total / 2;
    for (std::size_t k = 0; k < m; ++k) put(a, k, all[k]);
    for (std::size_t k = m; k < total; ++k) put(bw, k - m, all[k]);
    a->n = static_cast<std::uint16_t>(m);
    bw->n = static_cast<std::uint16_t>(total - m);
    leaf_pad(a);
    leaf_pad(bw);
    in->key[i] = bw->key[0];
}

// Two interior siblings and the separator between them as one sequence,
// then merged into the left or shared evenly.
void Registry::rebalance_inners(Inner* in, std::size_t i) {
    Inner* a = own_inner(in->child[i]);
    in->child[i] = a;
    const auto* b = static_cast<const Inner*>(in->child[i + 1]);
    std::uintptr_t keys[2 * kInnerKeys + 1];
    const void* kids[2 * kInnerKeys + 2];
    std::size_t nk = 0, nc = 0;
    for (std::size_t k = 0; k < a->n; ++k) keys[nk++] = a->key[k];
    keys[nk++] = in->key[i];
    for (std::size_t k = 0; k < b->n; ++k) keys[nk++] = b->key[k];
    for (std::size_t k = 0; k <= a->n; ++k) kids[nc++] = a->child[k];
    for (std::size_t k = 0; k <= b->n; ++k) kids[nc++] = b->child[k];
    auto fill = [](Inner* dst, const std::uintptr_t* ks, const void* const* cs, std::size_t n) {
        for (std::size_t k = 0; k < n; ++k) dst->key[k] = ks[k];
        for (std::size_t k = 0; k <= n; ++k) dst->child[k] = cs[k];
        for (std::size_t k = n + 1; k <= kInnerKeys; ++k) dst->child[k] = nullptr;
        dst->n = static_cast<std::uint16_t>(n);
        inner_pad(dst);
    };
    if (nc <= kInnerKeys + 1) {
        fill(a, keys, kids, nk);
        drop(b, 1);
        inner_erase_at(in, i);
        return;
    }
    Inner* bw = own_inner(b);
    in->child[i + 1] = bw;
    std::size_t m = nc / 2;  // children left; keys[m - 1] moves up
    fill(a, keys, kids, m - 1);
    fill(bw, keys + m, kids + m, nk - m);
    in->key[i] = keys[m - 1];
}

// Publishes the tree the update built: its nodes become immutable, the old
// ones it replaced wait for readers, the ones it built and discarded go back.
void Registry::commit() {
    if (work_height_ == 0 && static_cast<Leaf*>(work_root_)->n == 0) {
        drop(work_root_, 0);
        work_root_ = const_cast<Leaf*>(&kEmptyLeaf);
    }
    for (void* t : fresh_) {
        void* b = untag(t);
        if (is_leaf_tag(t))
            static_cast<Leaf*>(b)->fresh = 0;
        else
            static_cast<Inner*>(b)->fresh = 0;
    }
    root_.store(reinterpret_cast<std::uintptr_t>(work_root_) | work_height_, std::memory_order_release);
    std::ptrdiff_t bytes = 0;
    for (void* t : fresh_) bytes += static_cast<std::ptrdiff_t>(node_bytes(is_leaf_tag(t)));
    for (void* t : dropped_) bytes -= static_cast<std::ptrdiff_t>(node_bytes(is_leaf_tag(t)));
    for (void* t : replaced_) {
        bytes -= static_cast<std::ptrdiff_t>(node_bytes(is_leaf_tag(t)));
        retire(untag(t), is_leaf_tag(t));
    }
    for (void* t : dropped_) pool_put(t);
    bump(live_bytes_, static_cast<std::size_t>(bytes));
    bump(count_, static_cast<std::size_t>(work_count_));
    fresh_.clear();
    replaced_.clear();
    dropped_.clear();
}

void Registry::rollback() {
    for (void* t : fresh_) pool_put(t);
    fresh_.clear();
    replaced_.clear();
    dropped_.clear();
}

const char* type_name(Type t) {
    switch (t) {
        case Type::unregistered: return "unregistered";
        case Type::host: return "host";
        case Type::host_pinned: return "host-pinned";
        case Type::cuda: return "cuda";
        case Type::cuda_managed: return "cuda-managed";
    }
    return "?";
}

}  // namespace ldshim::memtype
