// The walk of the loaded objects that keeps the live model in step
// (loaded_sync.cc), and what one walk leaves: shared by the model's
// construction (LiveProcess::process_start) and its synchronisation.
// Internal to resolver/.
#pragma once

#include "host/loaded_objects.h"
#include "loader/elf_facts.h"
#include "resolver/live_process.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace ldshim::resolver {

// The loader words (host::loader_words) as read inside a walk, where the
// loader's write lock is held: exactly what dl_iterate_phdr reports, if the
// layout they were located by is right.
struct WordsSeen {
    unsigned long long adds = 0;
    unsigned int nloaded = 0;
    int write_lock = 0;
    std::size_t nns = 0;
    bool read = false;
};

// What one walk copies per object it could not match to a known one, under
// the loader's lock (host/loaded_objects.h): its name, its PT_LOAD segments,
// and for an object the model does not know, the raw facts
// (copy_loaded_facts).  A matched object costs one Step and nothing else.
struct Visited {
    std::uintptr_t addr;
    const void* phdr;
    std::size_t name;  // offset in the text
    std::size_t first_segment, segments;
    std::size_t facts, facts_size;        // in the text; npos: not copied
    std::size_t build_id, build_id_size;  // in the text; npos: none copied
};
using host::Segment;
struct Step {
    void* known;          // the matched LiveProcess::Known (private there), or nullptr
    std::size_t visited;  // else: the index in ScanRoom::objects
};

// An object the last walk could not match, decoded after the walk.
struct LiveProcess::Fresh {
    Key key;
    std::string name;
    std::vector<std::pair<std::uintptr_t, std::uintptr_t>> segments;  // PT_LOAD, [lo, hi)
    std::optional<loader::FactsResult> facts;                         // read for objects the model does not know
    std::string build_id;                                             // of the mapped object, for those
};

struct LiveProcess::Scan {
    std::span<const Step> steps;  // every object, in walk order (in room_, until the next walk)
    std::vector<Fresh> fresh;
    host::LoadCounters counters;
    WordsSeen words;
    // The words agree with the walk: adds, the walk's length, subs (adds
    // minus nloaded when namespace 0 is the only one), and the lock held.
    bool words_match() const {
        return words.read && words.adds == counters.adds && words.nloaded == steps.size() && words.write_lock != 0 &&
               (words.nns != 1 || counters.adds - words.nloaded == counters.subs);
    }
};

struct LiveProcess::ScanRoom {
    host::Scratch<Step> steps;
    host::Scratch<Visited> objects;
    host::Scratch<Segment> segments;
    host::ScratchText text;
    host::LoadCounters counters;
    WordsSeen words;
    host::InOrderMatch in_order;  // each object against the last walk's order (LiveProcess::match)

    host::ScratchBlock block;  // the room of the lists above

    void reset(std::size_t n) {
        block.lay_out(host::ListRoom{objects, n}, host::ListRoom{steps, n}, host::ListRoom{segments, 4 * n},
                      host::ListRoom{text, 256 * n});
        in_order = {};
        words = {};
    }
    bool overflowed() const {
        return steps.overflowed() || objects.overflowed() || segments.overflowed() || text.overflowed();
    }
};

}  // namespace ldshim::resolver
