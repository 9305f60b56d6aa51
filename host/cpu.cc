#include "host/cpu.h"

#include "loader/loader_config.h"

#include <sys/auxv.h>

#include <cstring>

#if defined(__x86_64__) && __has_include(<sys/platform/x86.h>)
#include <cpuid.h>
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

#if LDSHIM_X86_FEATURES
static bool cpu_is_intel() {
    unsigned a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d)) return false;
    return b == 0x756e6547 && d == 0x49656e69 && c == 0x6c65746e;  // "GenuineIntel"
}

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
    if (auto at = getauxval(AT_PLATFORM)) c.platform = reinterpret_cast<const char*>(at);
    // Only on Intel does glibc override AT_PLATFORM and set avx512_1.
    if (cpu_is_intel()) {
        const char* over = nullptr;
        if (LDSHIM_A(AVX512CD)) {
            if (LDSHIM_A(AVX512ER)) {
                if (LDSHIM_A(AVX512PF)) over = "xeon_phi";
            } else if (LDSHIM_A(AVX512BW) && LDSHIM_A(AVX512DQ) && LDSHIM_A(AVX512VL)) {
                c.hwcap |= kHwcapAvx512_1;
            }
        }
        if (!over && LDSHIM_A(AVX2) && LDSHIM_A(FMA) && LDSHIM_A(BMI1) && LDSHIM_A(BMI2) && LDSHIM_A(LZCNT) &&
            LDSHIM_A(MOVBE) && LDSHIM_A(POPCNT))
            over = "haswell";
        if (over) c.platform = over;
    }
#undef LDSHIM_A
    return c;
}

std::string cpu_identity() {
    std::string id;
    auto add = [&](const void* p, std::size_t n) { id.append(static_cast<const char*>(p), n); };
    unsigned regs[4] = {};
    for (unsigned leaf : {0u, 1u, 7u, 0x80000001u})
        if (__get_cpuid_count(leaf, 0, &regs[0], &regs[1], &regs[2], &regs[3])) add(regs, sizeof regs);
    if (__get_cpuid(1, &regs[0], &regs[1], &regs[2], &regs[3]) && (regs[2] & bit_OSXSAVE)) {
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
