// The patching engine: finds every import of a hooked function in every
// loaded object (but ldshim's own), publishes what the hook must call, then
// writes the hook into the slot; follows objects that appear (dl_iterate_phdr
// add counter) and disappear (sub counter: everything is rescanned, so a new
// library mapped at a freed base is patched and nothing stale survives);
// restores exactly what it changed on uninstall.  Passes are serialised by a
// mutex; hooks themselves never take it.
#pragma once

#include "host/futex_mutex.h"
#include "host/libc.h"
#include "machine/machine.h"

#include <link.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace ldshim::hooks {

enum class HookId : int;
struct ScanRoom;  // patcher.cc

// What scans learn of each object that does not change while it stays
// loaded: whether it is ldshim's, and the slots the hooks want.
struct KnownHit {
    std::uintptr_t slot;
    int id;
    std::string version;  // the version the import names; empty: none
};
struct KnownObject {
    std::uintptr_t base;
    unsigned long long visited;  // the visit epoch that last scanned it (0: none)
    std::uint32_t first, count;  // its hits in the patcher's list
    bool ldshim;
};

// What the front entry for dlopen or dlmopen (`id`) must call when reached
// from `caller`: what that object's slot held before ldshim, or else the
// hook's shared next.  No lock, no allocation.
void* loader_next(HookId id, const void* caller);

class Patcher {
public:
    static Patcher& instance();
    // The instance if it was built, else nullptr (never builds it).
    static Patcher* existing();
    // glibc's own definition of `name` -- one of the loader entry points
    // libldshim_preload.so hands on with RTLD_NEXT -- when that is what
    // RTLD_NEXT finds: a pass has looked at every loaded object, and none
    // but libc and ldshim's own may define it (their Bloom filters say no).
    // Else null.  Costs no lookup through the loaded objects, as dlsym does.
    void* libc_next(const char* name);
    // fork(): lib/fork_handlers.cc holds the engine's and the log's locks
    // across it.
    void fork_prepare();
    void fork_release();

    int install(unsigned flags);  // ldshim_status
    int uninstall();
    // Patches objects that appeared since the last pass; cheap (one
    // dl_iterate_phdr step) when nothing changed.
    int refresh();

    // Puts back in front every dlopen/dlmopen import slot that someone took
    // over since ldshim wrote or watched it (a GOT patcher that ran after
    // ldshim), chaining to the new value; says whether code in [lo, hi) had
    // taken one.
    bool reclaim_loader_slots(std::uintptr_t lo, std::uintptr_t hi);

private:
    struct Patch {
        std::uintptr_t slot, original, hook;
        std::uintptr_t base;  // the object's load base
        int id;
        bool plainly_writable;
        std::string object;
        std::uintptr_t target;  // what the hook calls for this slot (its value before, or its binding)
    };
    // An import slot found by a scan, not holding a hook yet.
    struct Candidate {
        std::uintptr_t base, slot, value;
        int id;
        bool lazy;  // the slot still points into its own object (unbound PLT)
        bool plainly_writable;
        std::string object, version;
        std::uintptr_t target = 0;  // what the hook will call for this slot
        bool foreign = false;       // target is another tool's function, not the original
    };
    struct Range {
        std::uintptr_t lo, hi;
    };
    struct Scan {
        std::vector<Candidate> found;
        std::vector<std::uintptr_t> confirmed;  // slots that still hold a hook (sorted)
    };

    // full: rescan every object (after an unload); patch: false only prunes
    // the records of slots that no longer hold a hook.
    void pass_locked(bool full, bool patch = true);
    bool nothing_new_locked(unsigned flags) const;
    // The steps of a pass.  Only scan_locked and the writes walk the loaded
    // objects (under the loader's lock, without allocating); the decisions
    // between them make lookups (dlsym, dladdr) that take that lock.
    Scan scan_locked();
    void remember_locked(const ScanRoom& room);  // after a walk: what it learnt
    std::vector<Candidate> decide_locked(std::vector<Candidate> found);
    void write_and_record_locked(std::vector<Candidate>& todo);
    bool in_ldshim(std::uintptr_t addr) const;
    // Rebuilds the table loader_next() reads, after a pass.
    void publish_loader_targets_locked();

    host::FutexMutex mu_;  // taken at every start-up: no libc lock (host/futex_mutex.h)
    bool installed_ = false;
    bool pinned_ = false;      // libldshim made undeletable (before its first hook is written)
    unsigned flags_ = 0;       // the LDSHIM_HOOK_* sets installed so far
    host::LoadCounters seen_;  // the loader's counters at the last pass's walk
    bool retry_ = false;       // an object was skipped half-loaded: the next refresh looks again
    // What the scans have seen of the names libc_next answers: nothing yet,
    // only libc's definitions, or an object besides libc that may define one.
    enum class Relayed { unknown, libc_only, elsewhere };
    std::atomic<Relayed> relayed_{Relayed::unknown};
    // The objects marked with the current epoch (KnownObject::visited) were
    // scanned since the last time every object had to be read again; an
    // incremental pass skips them.  rescan_all_locked() starts a new epoch:
    // a full pass, new hook sets, a scan that patched nothing, an uninstall.
    unsigned long long visit_epoch_ = 1;
    void rescan_all_locked() { ++visit_epoch_; }
    // What scans learnt of the objects (for the sets in flags_): a full pass
    // reads only their wanted slots again.  All of it is forgotten once an
    // object goes away (another may take its base).
    std::vector<KnownObject> known_;  // in the order of the walks
    std::vector<KnownHit> known_hits_;
    unsigned long long known_subs_ = ~0ull;              // the loader's sub counter they hold for
    std::unordered_map<std::uintptr_t, Patch> patches_;  // by slot
    // Loader slots left alone because they already lead to ldshim (bound to
    // the preload's dlopen): watched, so that a GOT patcher that takes one
    // over later is noticed (reclaim_loader_slots).
    std::unordered_map<std::uintptr_t, int> watched_;  // slot -> hook id
    std::vector<Range> ldshim_ranges_;                 // segments of objects carrying the marker
    std::size_t scan_room_ = 16;                       // what the last scan needed (loaded_objects.h)
    ScanRoom* room_ = nullptr;                         // the scans' room, built once (never freed, like the engine)
};

}  // namespace ldshim::hooks
