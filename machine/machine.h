// The machines ldshim knows, stated once: their ELF numbers and loaders,
// which one this build runs on, and the few instructions and relocation
// types that differ.  Every folder reads these from here (this folder
// depends on nothing); code that only compiles for one machine (assembly,
// intrinsics, CPUID) still tests the compiler's own __x86_64__/__aarch64__.
// Porting to another machine starts here, then hooks/dlopen_entry.h (the
// loader's entries) and hooks/as_caller.cc (a call made with the caller's
// return address).
#pragma once

#include <elf.h>

#include <cstddef>
#include <cstdint>

namespace ldshim::machine {

// ELF e_machine values of the machines ldshim models (every build models
// both: ldsearch reads a root of the other machine).
inline constexpr std::uint16_t kX86_64 = EM_X86_64;
inline constexpr std::uint16_t kAarch64 = EM_AARCH64;

// The machine this build runs on; EM_NONE on one ldshim does not know.
#if defined(__x86_64__)
inline constexpr std::uint16_t kOwn = kX86_64;
#elif defined(__aarch64__)
inline constexpr std::uint16_t kOwn = kAarch64;
#else
inline constexpr std::uint16_t kOwn = EM_NONE;
#endif

constexpr bool modelled(std::uint16_t machine) { return machine == kX86_64 || machine == kAarch64; }

// The 64-bit loader's path (PT_INTERP) on a machine; nullptr for another.
constexpr const char* loader_path(std::uint16_t machine) {
    if (machine == kX86_64) return "/lib64/ld-linux-x86-64.so.2";
    if (machine == kAarch64) return "/lib/ld-linux-aarch64.so.1";
    return nullptr;
}

// What apart-kept data is aligned to, so that writers and readers do not
// share a line (both machines' cores use 64 bytes).
inline constexpr std::size_t kCacheLine = 64;

// One spin-wait step: tells the core (and an SMT sibling) that this is a wait.
[[gnu::always_inline]] inline void cpu_relax() noexcept {
#if defined(__x86_64__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield" ::: "memory");
#endif
}

// Which relocation types of this machine put a symbol's address into a slot
// that a hook can take over.
enum class SlotKind : std::uint8_t {
    none,
    jump_slot,  // a PLT entry's GOT slot (lazy or bound)
    glob_dat,   // a GOT slot of an address loaded through the GOT (-fno-plt, &f in PIC)
    abs64,      // a pointer in data (static tables of function pointers)
};

// Whether this build knows its machine's slot relocations.
inline constexpr bool kSlotsKnown = modelled(kOwn);

// The kind of slot a relocation of this machine writes.
constexpr SlotKind slot_kind(std::uint32_t type) {
    if constexpr (kOwn == kX86_64) {
        switch (type) {
            case R_X86_64_JUMP_SLOT: return SlotKind::jump_slot;
            case R_X86_64_GLOB_DAT: return SlotKind::glob_dat;
            case R_X86_64_64: return SlotKind::abs64;
            default: return SlotKind::none;
        }
    } else if constexpr (kOwn == kAarch64) {
        switch (type) {
            case R_AARCH64_JUMP_SLOT: return SlotKind::jump_slot;
            case R_AARCH64_GLOB_DAT: return SlotKind::glob_dat;
            case R_AARCH64_ABS64: return SlotKind::abs64;
            default: return SlotKind::none;
        }
    } else {
        return SlotKind::none;
    }
}

}  // namespace ldshim::machine
