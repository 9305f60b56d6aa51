#include "memtype/registry.h"

#include <pthread.h>

#include "memtype/epoch.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

namespace ldshim::memtype {

namespace {
constexpr std::uintptr_t kTop = std::numeric_limits<std::uintptr_t>::max();
using detail::count_le;
using detail::span_length;

std::size_t snapshot_bytes(std::size_t nchunks) {
    return sizeof(Registry::Snapshot) + nchunks * (sizeof(void*) + sizeof(std::uintptr_t)) + 64;
}

Registry::Snapshot* make_snapshot(std::size_t nchunks) {
    std::size_t bytes = (snapshot_bytes(nchunks) + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, bytes);
    if (!p) throw std::bad_alloc();
    auto* s = static_cast<Registry::Snapshot*>(p);
    s->nchunks = nchunks;
    s->nentries = 0;
    return s;
}
}  // namespace

struct Registry::Flat {
    std::uintptr_t base, last;
    std::uint64_t generation;
    std::int32_t device;
    Type type;
};

Registry::Registry() : dom_(&EpochDomain::instance()), current_(make_snapshot(0)) {}

Registry::~Registry() {
    const Snapshot* s = current_.load(std::memory_order_relaxed);
    for (std::size_t i = 0; i < s->nchunks; ++i) delete s->chunks()[i];
    std::free(const_cast<Snapshot*>(s));
    for (auto& r : retired_)
        for (std::size_t i = 0; i < r.blocks.size(); ++i) {
            if (i == 0)
                std::free(const_cast<void*>(r.blocks[i]));
            else
                delete static_cast<const Chunk*>(r.blocks[i]);
        }
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

std::size_t Registry::size() const noexcept {
    EpochDomain::Guard guard(*dom_);
    return __atomic_load_n(&current_.load(std::memory_order_acquire)->nentries, __ATOMIC_RELAXED);
}

std::size_t Registry::memory_bytes() const noexcept {
    EpochDomain::Guard guard(*dom_);
    const Snapshot* s = current_.load(std::memory_order_acquire);
    return snapshot_bytes(s->nchunks) + s->nchunks * sizeof(Chunk);
}

std::vector<Info> Registry::entries() const {
    std::vector<Info> out;
    EpochDomain::Guard guard(*dom_);
    const Snapshot* s = current_.load(std::memory_order_acquire);
    for (std::size_t c = 0; c < s->nchunks; ++c) {
        const Chunk* ch = __atomic_load_n(&s->chunks()[c], __ATOMIC_ACQUIRE);
        for (std::uint32_t i = 0; i < ch->n; ++i)
            out.push_back({ch->e[i].type, ch->e[i].device, ch->base[i], span_length(ch->base[i], ch->e[i].last),
                           ch->e[i].generation});
    }
    return out;
}

std::uint64_t Registry::insert(std::uintptr_t base, std::size_t length, Type type, int device) {
    if (length == 0) return 0;
    std::uintptr_t last = length - 1 > kTop - base ? kTop : base + (length - 1);
    std::lock_guard<std::mutex> lock(write_mu_);
    Flat add{base, last, next_generation_++, device, type};
    edit(base, last, &add);
    return add.generation;
}

void Registry::remove(std::uintptr_t base, std::size_t length) {
    if (length == 0) return;
    std::uintptr_t last = length - 1 > kTop - base ? kTop : base + (length - 1);
    std::lock_guard<std::mutex> lock(write_mu_);
    edit(base, last, nullptr);
}

void Registry::clear() {
    std::lock_guard<std::mutex> lock(write_mu_);
    const Snapshot* s = current_.load(std::memory_order_relaxed);
    std::vector<const void*> garbage{s};
    for (std::size_t i = 0; i < s->nchunks; ++i) garbage.push_back(s->chunks()[i]);
    Snapshot* empty = make_snapshot(0);
    publish(empty, std::move(garbage), snapshot_bytes(s->nchunks) + s->nchunks * sizeof(Chunk));
    reclaim(true);
}

// Replace [base, last] (cutting what overlaps it) and optionally insert `add`.
// Only the chunks that hold overlapping entries, plus at most one neighbour
// to keep chunks from shrinking to nothing, are rebuilt.  One function on
// purpose: the affected range, the rebuilt entries and the new index are
// one copy-on-write step whose invariants read best together.
void Registry::edit(std::uintptr_t base, std::uintptr_t last, const Flat* add) {  // NOLINT(readability-function-size)
    const Snapshot* s = current_.load(std::memory_order_relaxed);
    const std::size_t nc = s->nchunks;
    std::size_t ci = 0, cj = 0;  // affected chunks [ci, cj)
    if (nc > 0) {
        std::size_t a = count_le(s->first(), nc, base);
        std::size_t b = count_le(s->first(), nc, last);
        ci = a ? a - 1 : 0;
        cj = (b ? b - 1 : 0) + 1;
    }
    std::vector<Flat> flat;
    bool changed = add != nullptr;
    auto take = [&](std::size_t c, std::vector<Flat>& out) {
        const Chunk* ch = s->chunks()[c];
        for (std::uint32_t i = 0; i < ch->n; ++i)
            out.push_back({ch->base[i], ch->e[i].last, ch->e[i].generation, ch->e[i].device, ch->e[i].type});
    };
    for (std::size_t c = ci; c < cj; ++c) {
        const Chunk* ch = s->chunks()[c];
        for (std::uint32_t i = 0; i < ch->n; ++i) {
            Flat e{ch->base[i], ch->e[i].last, ch->e[i].generation, ch->e[i].device, ch->e[i].type};
            if (e.last < base || e.base > last) {
                flat.push_back(e);
                continue;
            }
            changed = true;
            if (e.base < base) flat.push_back({e.base, base - 1, e.generation, e.device, e.type});
            if (e.last > last) flat.push_back({last + 1, e.last, e.generation, e.device, e.type});
        }
    }
    if (!changed) return;  // removing a gap: nothing to publish
    if (add)
        flat.insert(std::upper_bound(flat.begin(), flat.end(), add->base,
                                     [](std::uintptr_t b, const Flat& f) { return b < f.base; }),
                    *add);
    // Absorb a neighbour when the rebuilt run got small.
    if (flat.size() < kChunk / 2) {
        if (cj < nc) {
            take(cj, flat);
            ++cj;
        } else if (ci > 0) {
            std::vector<Flat> before;
            take(ci - 1, before);
            flat.insert(flat.begin(), before.begin(), before.end());
            --ci;
        }
    }
    // Rebuild the run as chunks, splitting only what overflows: evenly, or,
    // when the new range went to the end of the address space seen so far
    // (allocators grow upwards), full chunks first so that appends do not
    // leave half-empty chunks behind.
    std::size_t pieces = flat.empty() ? 0 : (flat.size() + kChunk - 1) / kChunk;
    const bool append = add && cj == nc && !flat.empty() && flat.back().base == add->base;
    std::vector<Chunk*> fresh;
    for (std::size_t p = 0, pos = 0; p < pieces; ++p) {
        std::size_t take_n =
            append ? std::min(kChunk, flat.size() - pos) : flat.size() / pieces + (p < flat.size() % pieces ? 1 : 0);
        auto* ch = new Chunk();
        std::fill(std::begin(ch->base), std::end(ch->base), kTop);
        for (std::size_t k = 0; k < take_n; ++k, ++pos) {
            const Flat& f = flat[pos];
            ch->base[k] = f.base;
            ch->e[k] = {f.last, f.generation, f.device, f.type};
        }
        ch->n = static_cast<std::uint32_t>(take_n);
        fresh.push_back(ch);
    }
    // The common update -- one chunk rewritten, same first key -- leaves the
    // index as it is: the chunk pointer is swapped in place, so readers keep
    // their cached index lines and only the one chunk changes under them.
    // (A lookup reads one chunk, so old and new chunks side by side are each
    // a state the writer published.)
    if (cj - ci == 1 && fresh.size() == 1 && fresh[0]->base[0] == s->first()[ci]) {
        auto* live = const_cast<Snapshot*>(s);
        const Chunk* old = s->chunks()[ci];
        std::size_t entries = s->nentries - old->n + fresh[0]->n;
        __atomic_store_n(&live->chunks()[ci], fresh[0], __ATOMIC_RELEASE);
        __atomic_store_n(&live->nentries, entries, __ATOMIC_RELAXED);
        retire({nullptr, old}, sizeof(Chunk));
        return;
    }
    std::size_t nn = nc - (cj - ci) + fresh.size();
    Snapshot* next = make_snapshot(nn);
    std::size_t k = 0, entries = 0;
    auto put = [&](const Chunk* ch) {
        next->chunks()[k] = ch;
        next->first()[k] = ch->base[0];
        ++k;
        entries += ch->n;
    };
    for (std::size_t c = 0; c < ci; ++c) put(s->chunks()[c]);
    for (Chunk* ch : fresh) put(ch);
    for (std::size_t c = cj; c < nc; ++c) put(s->chunks()[c]);
    next->nentries = entries;
    std::vector<const void*> garbage{s};
    for (std::size_t c = ci; c < cj; ++c) garbage.push_back(s->chunks()[c]);
    publish(next, std::move(garbage), snapshot_bytes(s->nchunks) + (cj - ci) * sizeof(Chunk));
}

void Registry::publish(Snapshot* next, std::vector<const void*> garbage, std::size_t garbage_bytes) {
    current_.store(next, std::memory_order_release);
    retire(std::move(garbage), garbage_bytes);
}

// `blocks` were reachable until now: free them once no reader can hold them.
// A batch whose first block is a snapshot frees it with free(), the rest are
// chunks; a batch of chunks alone is marked by a leading nullptr.
void Registry::retire(std::vector<const void*> blocks, std::size_t bytes) {
    std::uint64_t e = dom_->advance();
    retired_.push_back({e, std::move(blocks), bytes});
    retired_bytes_ += bytes;
    reclaim(false);
}

// Frees what no reader can still see.  The first block of each batch is a
// snapshot (malloc), the rest are chunks (new).
// Reclaiming costs the readers an interrupt (membarrier), so it is batched:
// it runs once the retired memory exceeds 256 KiB or twice the live snapshot,
// which bounds the memory held for readers to a small multiple of the live
// size.
void Registry::reclaim(bool force) {
    if (retired_.empty()) return;
    const Snapshot* live = current_.load(std::memory_order_relaxed);
    std::size_t live_bytes = snapshot_bytes(live->nchunks) + live->nchunks * sizeof(Chunk);
    if (!force && retired_bytes_ < std::max<std::size_t>(256 << 10, 2 * live_bytes)) return;
    // One barrier, then every batch retired before the oldest reader's epoch.
    std::uint64_t oldest = dom_->oldest_reader();
    std::size_t freed = 0;
    while (freed < retired_.size() && retired_[freed].epoch < oldest) ++freed;
    for (std::size_t i = 0; i < freed; ++i) {
        auto& r = retired_[i];
        retired_bytes_ -= r.bytes;
        for (std::size_t b = 0; b < r.blocks.size(); ++b) {
            if (b == 0)
                std::free(const_cast<void*>(r.blocks[b]));  // a snapshot, or nullptr
            else
                delete static_cast<const Chunk*>(r.blocks[b]);
        }
    }
    retired_.erase(retired_.begin(), retired_.begin() + static_cast<std::ptrdiff_t>(freed));
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
