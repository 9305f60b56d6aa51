// Writes one pointer-sized slot in a loaded object: a compare-and-swap, so
// a slot that changed since it was read is never overwritten, with the page
// made writable only for the store and its previous protection put back
// afterwards (a full-RELRO GOT is read-only again).  The protections come
// from /proc/self/maps, read once per writer (one patching pass); the
// writer's own changes are undone before it returns, so the copy stays true.
#pragma once

#include <cstdint>
#include <vector>

namespace ldshim::hooks {

class SlotWriter {
public:
    enum class Result { written, changed, protect_failed, unmapped };
    Result write(std::uintptr_t slot, std::uintptr_t expected, std::uintptr_t value);
    static const char* describe(Result r);

private:
    struct Mapping {
        std::uintptr_t lo, hi;
        int prot;
    };
    bool load();
    int protection(std::uintptr_t page);  // -1: not mapped

    bool loaded_ = false;
    std::vector<Mapping> maps_;
};

}  // namespace ldshim::hooks
