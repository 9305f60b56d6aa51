// Writes pointer-sized slots in loaded objects: each one a compare-and-swap,
// so a slot that changed since it was read is never overwritten, with the
// page made writable only for the store and its previous protection put back
// afterwards (a full-RELRO GOT is read-only again).  One protection change
// per page.
//
// The stores happen inside one walk of the loaded objects, so that no object
// can be unloaded between the check that it is there (and relocated) and the
// store; the walk holds the loader's lock, so everything that allocates or
// reads files -- the current protections, from /proc/self/maps -- is done
// before it (loaded_objects.h).
#pragma once

#include <cstdint>
#include <vector>

namespace ldshim::hooks {

enum class WriteResult {
    written,
    changed,         // the slot no longer held the expected value
    protect_failed,  // mprotect refused
    unmapped,        // the object or the page is gone
    unloading,       // objects kept being unloaded during every attempt: try at the next pass
};

struct SlotWrite {
    std::uintptr_t base;  // load base of the object holding the slot
    std::uintptr_t slot, expected, value;
    // The object's program headers put the slot in a PF_W segment, outside
    // the RELRO range: no protection change needed.
    bool plainly_writable;
    WriteResult result = WriteResult::unmapped;
};

// Writes every item whose object is still loaded and relocated; sets each
// item's result.
void write_slots(std::vector<SlotWrite>& writes);

const char* describe(WriteResult r);

}  // namespace ldshim::hooks
