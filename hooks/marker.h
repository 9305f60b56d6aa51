// ldshim's own libraries carry an ELF note (in a PT_NOTE segment, visible
// through dl_iterate_phdr without any lookup), and the patcher never writes
// into an object that has it: ldshim must not hook itself, nor the other
// ldshim library when both are loaded.
#pragma once

namespace ldshim::hooks {
constexpr unsigned kMarkerNoteType = 0x4c445348;  // "LDSH"
constexpr char kMarkerNoteName[] = "ldshim";      // with its NUL: 7 bytes
}  // namespace ldshim::hooks
