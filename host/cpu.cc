#include "host/cpu.h"

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

#if defined(__x86_64__)
// Each CPUID instruction traps to the hypervisor in a virtual machine, so
// where glibc exports the words its own start-up already read
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
