// The machine-specific part of patching: which relocation types put a
// symbol's address into a slot that a hook can take over.  Porting to
// another architecture means adding a block here, and one each in
// resolver/dlopen_entry.h (the loader's entries) and as_caller.cc (a call
// made with the caller's return address).
#pragma once

#include <elf.h>
#include <link.h>

#include <cstdint>

namespace ldshim::hooks::arch {

enum class SlotKind : std::uint8_t {
    none,
    jump_slot,  // a PLT entry's GOT slot (lazy or bound)
    glob_dat,   // a GOT slot of an address loaded through the GOT (-fno-plt, &f in PIC)
    abs64,      // a pointer in data (static tables of function pointers)
};

#if defined(__x86_64__)
constexpr bool kSupported = true;
constexpr SlotKind slot_kind(std::uint32_t type) {
    switch (type) {
        case R_X86_64_JUMP_SLOT: return SlotKind::jump_slot;
        case R_X86_64_GLOB_DAT: return SlotKind::glob_dat;
        case R_X86_64_64: return SlotKind::abs64;
        default: return SlotKind::none;
    }
}
#elif defined(__aarch64__)
constexpr bool kSupported = true;
constexpr SlotKind slot_kind(std::uint32_t type) {
    switch (type) {
        case R_AARCH64_JUMP_SLOT: return SlotKind::jump_slot;
        case R_AARCH64_GLOB_DAT: return SlotKind::glob_dat;
        case R_AARCH64_ABS64: return SlotKind::abs64;
        default: return SlotKind::none;
    }
}
#else
constexpr bool kSupported = false;
constexpr SlotKind slot_kind(std::uint32_t) { return SlotKind::none; }
#endif

const char* slot_kind_name(SlotKind k);

}  // namespace ldshim::hooks::arch
