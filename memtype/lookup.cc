// The read side of the registry: the descent from a published root to the
// answer, in three versions chosen once for the CPU (the library is built for
// baseline x86-64):
//   avx512  each node's keys compared eight at a time (vpcmpuq, unsigned);
//   avx2    four at a time (vpcmpgtq is signed: keys and pointer are biased
//           by 2^63, which turns it into an unsigned compare);
//   scalar  a branchless binary search unrolled at compile time (cmov).
// Every version prefetches a leaf's columns (ends, tags, devices) when it
// reaches the leaf, so that their cache lines arrive while the keys are
// compared.  All are wait-free: no lock, no allocation, no store.
#include "memtype/registry.h"

#include <atomic>
#include <cstddef>
#include <cstdint>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace ldshim::memtype::detail {

namespace {

[[gnu::always_inline]] inline void prefetch_columns(const Leaf* lf) noexcept {
    // The key lines are read at once; the columns one element each, later.
    __builtin_prefetch(&lf->last[0]);
    __builtin_prefetch(&lf->last[8]);
    __builtin_prefetch(&lf->tag[0]);
    __builtin_prefetch(&lf->tag[8]);
    __builtin_prefetch(&lf->device[0]);
}

// One interior level once c (the number of the node's keys <= p, clamped to
// its n) is known: the separator on the right bounds the gap, and the child.
[[gnu::always_inline]] inline const void* descend(const Inner* in, std::size_t c, std::uintptr_t* hi) noexcept {
    // Loaded whatever c is, so that the select stays a cmov.
    std::uintptr_t next = in->key[c < kInnerKeys ? c : kInnerKeys - 1];
    *hi = c < in->n ? next - 1 : *hi;
    return __atomic_load_n(&in->child[c], __ATOMIC_ACQUIRE);
}

[[gnu::always_inline]] inline Info make_info(std::uint64_t tag, int device, std::uintptr_t lo, std::uintptr_t hi,
                                             std::uintptr_t p, std::size_t length, bool* spans) noexcept {
    if (spans) {
        std::uintptr_t want_last = (length == 0) ? p : (length - 1 > kTop - p ? kTop : p + (length - 1));
        *spans = want_last > hi;
    }
    return {static_cast<Type>(tag & 0xff), device, lo, span_length(lo, hi), tag >> 8};
}

// The answer in a leaf with dead slots, or one the writer appended to
// after its state was loaded: the neighbours of p are the nearest live
// slots below the state's n.
[[gnu::noinline]] Info answer_in_place(const Leaf* lf, std::uint32_t state, std::size_t c, std::uintptr_t p,
                                       std::uintptr_t hi, std::size_t length, bool* spans) noexcept {
    // A slot appended after the state was loaded may lie over a range that
    // was live in that state (one freed since): count as the state does.
    const std::size_t n = state & 0xffff;
    c = c < n ? c : n;
    const std::uint32_t live = live_mask(state);
    const std::uint32_t before = live & ((2u << c >> 1) - 1);
    const std::uint32_t after = live & ~before;
    std::uint64_t tag = 0;
    int device = -1;
    std::uintptr_t lo = 0;  // no live range before: only in the leftmost leaf
    if (before) {
        auto j = static_cast<std::size_t>(31 - __builtin_clz(before));
        std::uintptr_t last = lf->last[j];
        if (p <= last && j == c - 1) {
            tag = __atomic_load_n(&lf->tag[j], __ATOMIC_RELAXED);  // a revived slot's may change (registry.h)
            return make_info(tag, lf->device[j], lf->key[j], last, p, length, spans);
        }
        lo = last + 1;
    }
    hi = after ? lf->key[__builtin_ctz(after)] - 1 : hi;
    return make_info(tag, device, lo, hi, p, length, spans);
}

// The answer in the leaf a lookup reached, given its state word (loaded
// before its keys), c = the number of its keys <= p and hi = the last
// address before the next entry beyond this leaf.  Most leaves have no
// dead slot, and then p's neighbours are slots c - 1 and c.
[[gnu::always_inline]] inline Info answer(const Leaf* lf, std::uint32_t state, std::size_t c, std::uintptr_t p,
                                          std::uintptr_t hi, std::size_t length, bool* spans) noexcept {
    const std::size_t n = state & 0xffff;
    if (__builtin_expect((state >> 16) != 0 || c > n, 0)) return answer_in_place(lf, state, c, p, hi, length, spans);
    // The fields, each set once: a default-built Info that the paths
    // overwrite costs four dead stores per lookup.
    std::uint64_t tag = 0;  // a gap: type unregistered, generation 0
    int device = -1;
    std::uintptr_t lo;
    if (c == 0) {  // only in the leftmost leaf: the gap from 0
        hi = n ? lf->key[0] - 1 : hi;
        lo = 0;
    } else {
        std::size_t j = c - 1;
        std::uintptr_t last = lf->last[j];
        if (p <= last) {
            hi = last;
            lo = lf->key[j];
            tag = __atomic_load_n(&lf->tag[j], __ATOMIC_RELAXED);  // a revived slot's may change (registry.h)
            device = lf->device[j];
        } else {
            hi = c < n ? lf->key[c] - 1 : hi;
            lo = last + 1;
        }
    }
    return make_info(tag, device, lo, hi, p, length, spans);
}

Info find_scalar(std::uintptr_t r, std::uintptr_t p, std::size_t length, bool* spans) noexcept {
    const void* node = reinterpret_cast<const void*>(r & ~kHeightMask);
    std::uintptr_t hi = kTop;  // the last address before the next entry on the right
    for (std::uintptr_t h = r & kHeightMask; h > 0; --h) {
        const auto* in = static_cast<const Inner*>(node);
        node = descend(in, rank<kInnerKeys>(in->key, in->n, p), &hi);  // clamped to n
    }
    const auto* lf = static_cast<const Leaf*>(node);
    const std::uint32_t state = load_state(lf);
    prefetch_columns(lf);
    return answer(lf, state, rank<kLeafKeys>(lf->key, state & 0xffff, p), p, hi, length, spans);
}

#if defined(__x86_64__)
// The SIMD versions leave p == ~0 (where the unused keys, ~0, would count as
// <= p) to the scalar one, so that they need not clamp the count to n.
//
// The number of keys <= x among the 63 of an interior node or the 16 of a
// leaf (64-byte aligned).
#define LDSHIM_AVX512 __attribute__((target("avx512f,popcnt"), always_inline)) inline
LDSHIM_AVX512 __mmask8 le8(const std::uintptr_t* k, __m512i x) noexcept {
    return _mm512_cmple_epu64_mask(_mm512_load_si512(k), x);
}
LDSHIM_AVX512 unsigned le16(const std::uintptr_t* k, __m512i x) noexcept {
    return _cvtmask16_u32(_mm512_kunpackb(le8(k + 8, x), le8(k, x)));
}
LDSHIM_AVX512 std::size_t inner_rank512(const Inner* in, std::uintptr_t p, __m512i x) noexcept {
    // One scalar step picks the half (branchless: a flag shifted), then its
    // 32 keys are compared at once.  Its 32nd word is masked out: in the
    // upper half it is the node's count, in the lower one key[31] > p.
    std::size_t half = static_cast<std::size_t>(in->key[31] <= p) << 5;
    const std::uintptr_t* k = in->key + half;
    unsigned top = _cvtmask16_u32(
        _mm512_kunpackb(_mm512_mask_cmple_epu64_mask(0x7f, _mm512_load_si512(k + 24), x), le8(k + 16, x)));
    return half + static_cast<std::size_t>(__builtin_popcount(le16(k, x) | top << 16));
}
LDSHIM_AVX512 std::size_t leaf_rank512(const Leaf* lf, __m512i x) noexcept {
    __mmask16 m = _mm512_kunpackb(le8(lf->key + 8, x), le8(lf->key, x));
    return static_cast<std::size_t>(__builtin_popcount(_cvtmask16_u32(m)));
}
#undef LDSHIM_AVX512

__attribute__((target("avx512f,popcnt"))) Info find_avx512(std::uintptr_t r, std::uintptr_t p, std::size_t length,
                                                           bool* spans) noexcept {
    if (__builtin_expect(p == kTop, 0)) return find_scalar(r, p, length, spans);
    const void* node = reinterpret_cast<const void*>(r & ~kHeightMask);
    std::uintptr_t hi = kTop;
    const __m512i x = _mm512_set1_epi64(static_cast<long long>(p));
    std::uintptr_t h = r & kHeightMask;
    if (h > 0) {  // a root with few keys (the same for every lookup) compares one vector
        const auto* in = static_cast<const Inner*>(node);
        std::size_t c = in->n < 8    ? static_cast<std::size_t>(__builtin_popcount(le8(in->key, x)))
                        : in->n < 16 ? static_cast<std::size_t>(__builtin_popcount(le16(in->key, x)))
                                     : inner_rank512(in, p, x);
        node = descend(in, c, &hi);
        --h;
    }
    for (; h > 0; --h) {
        const auto* in = static_cast<const Inner*>(node);
        node = descend(in, inner_rank512(in, p, x), &hi);
    }
    const auto* lf = static_cast<const Leaf*>(node);
    const std::uint32_t state = load_state(lf);
    prefetch_columns(lf);
    return answer(lf, state, leaf_rank512(lf, x), p, hi, length, spans);
}

// The writer's search (registry.cc), with the same compares: the keys <= p,
// clamped to n (for p == ~0 the unused keys count too).
__attribute__((target("avx512f,popcnt"))) std::size_t inner_count512(const Inner* in, std::uintptr_t p) noexcept {
    std::size_t c = inner_rank512(in, p, _mm512_set1_epi64(static_cast<long long>(p)));
    return c < in->n ? c : in->n;
}

// AVX2: each compare gives -1 per key > x; the sum over a node is minus the
// keys above x.
#define LDSHIM_AVX2 __attribute__((target("avx2,popcnt"), always_inline)) inline
constexpr long long kBias = static_cast<long long>(0x8000000000000000ULL);
LDSHIM_AVX2 __m256i gt4(const std::uintptr_t* k, __m256i xb) noexcept {
    __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i*>(k));
    return _mm256_cmpgt_epi64(_mm256_xor_si256(v, _mm256_set1_epi64x(kBias)), xb);
}
LDSHIM_AVX2 std::size_t sum_neg(__m256i a) noexcept {
    __m128i s = _mm_add_epi64(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
    s = _mm_add_epi64(s, _mm_unpackhi_epi64(s, s));
    return static_cast<std::size_t>(-_mm_cvtsi128_si64(s));
}
LDSHIM_AVX2 __m256i gt16(const std::uintptr_t* k, __m256i xb) noexcept {
    return _mm256_add_epi64(_mm256_add_epi64(gt4(k, xb), gt4(k + 4, xb)),
                            _mm256_add_epi64(gt4(k + 8, xb), gt4(k + 12, xb)));
}
LDSHIM_AVX2 std::size_t inner_rank256(const Inner* in, std::uintptr_t p, __m256i xb) noexcept {
    // The half as in inner_rank512; its 32nd word made ~0 (above x).
    std::size_t half = static_cast<std::size_t>(in->key[31] <= p) << 5;
    const std::uintptr_t* k = in->key + half;
    __m256i tail = _mm256_load_si256(reinterpret_cast<const __m256i*>(k + 28));
    tail = _mm256_blend_epi32(tail, _mm256_set1_epi64x(-1), 0xc0);
    tail = _mm256_cmpgt_epi64(_mm256_xor_si256(tail, _mm256_set1_epi64x(kBias)), xb);
    __m256i b =
        _mm256_add_epi64(_mm256_add_epi64(gt4(k + 16, xb), gt4(k + 20, xb)), _mm256_add_epi64(gt4(k + 24, xb), tail));
    return half + 32 - sum_neg(_mm256_add_epi64(gt16(k, xb), b));
}
LDSHIM_AVX2 std::size_t leaf_rank256(const Leaf* lf, __m256i xb) noexcept {
    return kLeafKeys - sum_neg(gt16(lf->key, xb));
}
#undef LDSHIM_AVX2

__attribute__((target("avx2,popcnt"))) Info find_avx2(std::uintptr_t r, std::uintptr_t p, std::size_t length,
                                                      bool* spans) noexcept {
    if (__builtin_expect(p == kTop, 0)) return find_scalar(r, p, length, spans);
    const void* node = reinterpret_cast<const void*>(r & ~kHeightMask);
    std::uintptr_t hi = kTop;
    const __m256i xb = _mm256_set1_epi64x(static_cast<long long>(p) ^ kBias);
    for (std::uintptr_t h = r & kHeightMask; h > 0; --h) {
        const auto* in = static_cast<const Inner*>(node);
        node = descend(in, inner_rank256(in, p, xb), &hi);
    }
    const auto* lf = static_cast<const Leaf*>(node);
    const std::uint32_t state = load_state(lf);
    prefetch_columns(lf);
    return answer(lf, state, leaf_rank256(lf, xb), p, hi, length, spans);
}

__attribute__((target("avx2,popcnt"))) std::size_t inner_count256(const Inner* in, std::uintptr_t p) noexcept {
    std::size_t c = inner_rank256(in, p, _mm256_set1_epi64x(static_cast<long long>(p) ^ kBias));
    return c < in->n ? c : in->n;
}
#endif

#if defined(__x86_64__)
// What the processor has and the kernel saves across a switch, as libgcc's
// __builtin_cpu_supports answers it (the feature bits, and XCR0 for the
// vector registers' state), read here: __builtin_cpu_supports would link
// libgcc's CPU model, whose constructor every process that preloads ldshim
// would run at start-up.
bool x86_has(Isa isa) noexcept {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_POPCNT) || !(c & bit_OSXSAVE) || !(c & bit_AVX)) return false;
    unsigned xcr0_lo, xcr0_hi;
    __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
    const bool ymm = (xcr0_lo & 0x06) == 0x06;  // SSE and AVX state
    const bool zmm = (xcr0_lo & 0xe6) == 0xe6;  // and the opmask, ZMM_Hi256 and Hi16_ZMM state
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    if (isa == Isa::avx512) return zmm && (b & bit_AVX512F);
    return isa == Isa::avx2 && ymm && (b & bit_AVX2);
}
#endif

bool cpu_has(Isa isa) noexcept {
#if defined(__SANITIZE_THREAD__)
    // The vector searches load a leaf's keys whole, the slot being appended
    // included, which ThreadSanitizer reports as a race; the scalar one
    // loads that key atomically.
    return isa == Isa::scalar;
#endif
#if defined(__x86_64__)
    if (isa != Isa::scalar) return x86_has(isa);
#endif
    return isa == Isa::scalar;
}

FindFn find_for([[maybe_unused]] Isa isa) noexcept {
#if defined(__x86_64__)
    if (isa == Isa::avx512) return find_avx512;
    if (isa == Isa::avx2) return find_avx2;
#endif
    return find_scalar;
}

// The first lookup in the process picks the search and installs it; racing
// first lookups install the same one.
Info find_first(std::uintptr_t r, std::uintptr_t p, std::size_t length, bool* spans) noexcept {
    Isa best = cpu_has(Isa::avx512) ? Isa::avx512 : cpu_has(Isa::avx2) ? Isa::avx2 : Isa::scalar;
    FindFn f = find_for(best);
    g_find.store(f, std::memory_order_relaxed);
    return f(r, p, length, spans);
}

}  // namespace

constinit std::atomic<FindFn> g_find{find_first};

// The search the lookups use, for the writer's fuller interior nodes: a
// vector compare of the node's keys instead of a chain of dependent loads.
// Before the first lookup has chosen, the scalar one.
std::size_t writer_rank(const Inner* in, std::uintptr_t p) noexcept {
#if defined(__x86_64__)
    FindFn f = g_find.load(std::memory_order_relaxed);
    if (f == find_avx512) return inner_count512(in, p);
    if (f == find_avx2) return inner_count256(in, p);
#endif
    return rank<kInnerKeys>(in->key, in->n, p);
}
bool use_isa(Isa isa) noexcept {
    if (!cpu_has(isa)) return false;
    g_find.store(find_for(isa), std::memory_order_relaxed);
    return true;
}

Isa current_isa() noexcept {
    FindFn f = g_find.load(std::memory_order_relaxed);
#if defined(__x86_64__)
    if (f == find_avx512) return Isa::avx512;
    if (f == find_avx2) return Isa::avx2;
#endif
    if (f == find_first) {
        return cpu_has(Isa::avx512) ? Isa::avx512 : cpu_has(Isa::avx2) ? Isa::avx2 : Isa::scalar;
    }
    return Isa::scalar;
}

}  // namespace ldshim::memtype::detail
