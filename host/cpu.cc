#include "host/cpu.h"

#include "loader/loader_config.h"

#include <sys/auxv.h>

#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#endif
#if defined(__x86_64__) && __has_include(<sys/platform/x86.h>)
#if defined(__clang__)
// glibc's header spells bool as _Bool, which clang++ rejects.
#define _Bool bool
#include <sys/platform/x86.h>
#undef _Bool
#else
#include <sys/platform/x86.h>
#endif
#define LDSHIM_X86_FEATURES 1
#else
#define LDSHIM_X86_FEATURES 0
#endif

namespace ldshim::host {

using loader::kHwcapAvx512_1;
using loader::kHwcapX86_64;

#if defined(__x86_64__)
static bool cpu_is_intel() {
    unsigned a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d)) return false;
    return b == 0x756e6547 && d == 0x49656e69 && c == 0x6c65746e;  // "GenuineIntel"
}

// The platform and dl_hwcap rule glibc applies on x86-64 (cpu-features.c,
// the same shape from 2.26 to 2.41), over "usable" feature bits: only on
// Intel does it override AT_PLATFORM and set avx512_1.  What opens the
// AVX-512 branch changed: before 2.33, AVX512F usable and AVX512CD present;
// from 2.33, AVX512CD active alone, so GLIBC_TUNABLES=glibc.cpu.hwcaps=
// -AVX512F leaves avx512_1 set.
struct X86Usable {
    bool avx2, fma, bmi1, bmi2, lzcnt, movbe, popcnt, avx512_branch, avx512er, avx512pf, avx512bw, avx512dq, avx512vl;
};

static void apply_platform_rule(CpuView& c, const X86Usable& u) {
    c.hwcap = kHwcapX86_64;
    if (auto at = getauxval(AT_PLATFORM)) c.platform = reinterpret_cast<const char*>(at);
    if (!cpu_is_intel()) return;
    const char* over = nullptr;
    if (u.avx512_branch) {
        if (u.avx512er) {
            if (u.avx512pf) over = "xeon_phi";
        } else if (u.avx512bw && u.avx512dq && u.avx512vl) {
            c.hwcap |= kHwcapAvx512_1;
        }
    }
    if (!over && u.avx2 && u.fma && u.bmi1 && u.bmi2 && u.lzcnt && u.movbe && u.popcnt) over = "haswell";
    if (over) c.platform = over;
}
#endif

#if LDSHIM_X86_FEATURES
// glibc 2.36's x86 rules (get-isa-level.h; the platform and dl_hwcap part of
// cpu-features.c) over the loader's own "active" bits, which already carry
// the XCR0 checks (AVX family only with YMM state, AVX-512 only with opmask
// and ZMM state, neither without OSXSAVE/XSAVE) and GLIBC_TUNABLES masking --
// including ld.so's own way of parsing that variable.  FPU counts when
// present: glibc never marks it active.
std::optional<CpuView> cpu_view() {
#define LDSHIM_A(f) CPU_FEATURE_ACTIVE(f)
    CpuView c;
    c.hwcap = kHwcapX86_64;
    bool base = LDSHIM_A(CMOV) && LDSHIM_A(CX8) && CPU_FEATURE_PRESENT(FPU) && LDSHIM_A(FXSR) && LDSHIM_A(MMX) &&
                LDSHIM_A(SSE) && LDSHIM_A(SSE2);
    bool v2 = base && LDSHIM_A(CMPXCHG16B) && LDSHIM_A(LAHF64_SAHF64) && LDSHIM_A(POPCNT) && LDSHIM_A(SSE3) &&
              LDSHIM_A(SSSE3) && LDSHIM_A(SSE4_1) && LDSHIM_A(SSE4_2);
    bool v3 = v2 && LDSHIM_A(AVX) && LDSHIM_A(AVX2) && LDSHIM_A(BMI1) && LDSHIM_A(BMI2) && LDSHIM_A(F16C) &&
              LDSHIM_A(FMA) && LDSHIM_A(LZCNT) && LDSHIM_A(MOVBE);
    bool v4 =
        v3 && LDSHIM_A(AVX512F) && LDSHIM_A(AVX512BW) && LDSHIM_A(AVX512CD) && LDSHIM_A(AVX512DQ) && LDSHIM_A(AVX512VL);
    c.isa_levels = 1u | (v2 ? 2u : 0u) | (v3 ? 4u : 0u) | (v4 ? 8u : 0u);
    apply_platform_rule(c, {LDSHIM_A(AVX2), LDSHIM_A(FMA), LDSHIM_A(BMI1), LDSHIM_A(BMI2), LDSHIM_A(LZCNT),
                            LDSHIM_A(MOVBE), LDSHIM_A(POPCNT), LDSHIM_A(AVX512CD), LDSHIM_A(AVX512ER),
                            LDSHIM_A(AVX512PF), LDSHIM_A(AVX512BW), LDSHIM_A(AVX512DQ), LDSHIM_A(AVX512VL)});
#undef LDSHIM_A
    return c;
}

#elif defined(__x86_64__)
// Without <sys/platform/x86.h> (glibc before 2.33) the loader's usable bits
// are computed as glibc 2.26 to 2.32 did: CPUID, and XCR0 for the AVX
// (YMM state) and AVX-512 (opmask and ZMM state) families.  The ISA levels
// are left at the baseline: those glibc have no glibc-hwcaps.
std::optional<CpuView> cpu_view() {
    unsigned a, b, c1, d;
    unsigned c1ecx = 0, c7ebx = 0, ext_ecx = 0;
    if (__get_cpuid(1, &a, &b, &c1, &d)) c1ecx = c1;
    if (__get_cpuid_count(7, 0, &a, &b, &c1, &d)) c7ebx = b;
    if (__get_cpuid(0x80000001u, &a, &b, &c1, &d)) ext_ecx = c1;
    unsigned xcr0 = 0;
    if (c1ecx & bit_OSXSAVE) {
        unsigned hi;
        __asm__ volatile("xgetbv" : "=a"(xcr0), "=d"(hi) : "c"(0));
    }
    bool avx = (c1ecx & bit_AVX) && (xcr0 & 6u) == 6u;
    bool avx512 = avx && (xcr0 & 0xe0u) == 0xe0u && (c7ebx & bit_AVX512F);
    CpuView c;
    apply_platform_rule(
        c, {avx && (c7ebx & bit_AVX2), avx && (c1ecx & bit_FMA), (c7ebx & bit_BMI) != 0, (c7ebx & bit_BMI2) != 0,
            (ext_ecx & bit_LZCNT) != 0, (c1ecx & bit_MOVBE) != 0, (c1ecx & bit_POPCNT) != 0,
            avx512 && (c7ebx & bit_AVX512CD), avx512 && (c7ebx & bit_AVX512ER), avx512 && (c7ebx & bit_AVX512PF),
            avx512 && (c7ebx & bit_AVX512BW), avx512 && (c7ebx & bit_AVX512DQ), avx512 && (c7ebx & bit_AVX512VL)});
    return c;
}
#endif

#if defined(__x86_64__)
// Each CPUID instruction traps to the hypervisor in a virtual machine (4 to
// 9 us each), so where glibc exports the words its own start-up already read
// (raw and active: the latter carries the XCR0 checks and GLIBC_TUNABLES),
// those are taken, with XGETBV (no trap).  Leaf 1 EBX[31:24] is the initial
// APIC id of the core that ran the start-up: it says nothing about features
// and would give each core its own cache entry.  The vendor (leaf 0) is left
// out: leaf 1's signature differs between vendors.
std::string cpu_identity() {
    std::string id;
    auto add = [&](const void* p, std::size_t n) { id.append(static_cast<const char*>(p), n); };
#if LDSHIM_X86_FEATURES
    for (unsigned index : {CPUID_INDEX_1, CPUID_INDEX_7, CPUID_INDEX_80000001})
        if (const cpuid_feature* f = __x86_get_cpuid_feature_leaf(index)) {
            cpuid_feature words = *f;
            if (index == CPUID_INDEX_1) words.cpuid_array[1] &= 0x00ffffffu;
            add(&words, sizeof words);
        }
    bool osxsave = CPU_FEATURE_PRESENT(OSXSAVE);
#else
    unsigned regs[4] = {};
    for (unsigned leaf : {1u, 7u, 0x80000001u})
        if (__get_cpuid_count(leaf, 0, &regs[0], &regs[1], &regs[2], &regs[3])) {
            if (leaf == 1u) regs[1] &= 0x00ffffffu;
            add(regs, sizeof regs);
        }
    bool osxsave = __get_cpuid(1, &regs[0], &regs[1], &regs[2], &regs[3]) && (regs[2] & bit_OSXSAVE);
#endif
    if (osxsave) {
        unsigned lo, hi;
        __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));  // the OS-enabled register state
        add(&lo, sizeof lo);
        add(&hi, sizeof hi);
    }
    return id;
}
#else
std::optional<CpuView> cpu_view() { return std::nullopt; }

std::string cpu_identity() {
    std::string id;
    for (unsigned long type : {AT_HWCAP, AT_HWCAP2}) {
        unsigned long v = getauxval(type);
        id.append(reinterpret_cast<const char*>(&v), sizeof v);
    }
    if (auto p = getauxval(AT_PLATFORM)) id += reinterpret_cast<const char*>(p);
    return id;
}
#endif

}  // namespace ldshim::host
