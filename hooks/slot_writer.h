// Writes one pointer-sized slot in a loaded object: a compare-and-swap, so
// a slot that changed since it was read is never overwritten, with the page
// made writable only for the store and its previous protection put back
// afterwards (a full-RELRO GOT is read-only again).  A slot in a writable
// segment outside PT_GNU_RELRO is written directly; for the others the
// current protection comes from /proc/self/maps, read at most once per writer
// (one patching pass, ~1 ms with 500 libraries) -- the writer's own changes
// are undone before it returns, so the copy stays true.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ldshim::hooks {

class SlotWriter {
public:
    enum class Result { written, changed, protect_failed, unmapped };
    // plainly_writable: the object's program headers put the slot in a
    // PF_W segment and outside the RELRO range.
    Result write(std::uintptr_t slot, std::uintptr_t expected, std::uintptr_t value, bool plainly_writable = false);
    // Several slots of one page: one protection change for all of them.
    struct Item {
        std::uintptr_t slot, expected, value;
        Result result;
    };
    void write_page(Item* items, std::size_t n, bool plainly_writable);
    static const char* describe(Result r);
    static std::uintptr_t page_of(std::uintptr_t addr);

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
