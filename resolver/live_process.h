// The search engine kept in step with the process it runs in: the runtime
// half of ldshim.  The model starts from this process's start-up: the
// emulation decides where each need was met (the same loader chain and
// search lists), and each object it loads is taken from what the loader
// holds -- facts read from memory, the file identity from the mappings
// (host/start_capture.h) -- and the directory statuses from glibc's own
// record (host/dir_record.h).  It is reconciled with what dl_iterate_phdr
// reports whenever objects came or went (loaded_sync.cc).  Objects that
// appeared without ldshim are adopted with no loader, which is what glibc
// records for anything dlopen'ed.
#pragma once

#include "host/libc.h"
#include "host/real_fs.h"
#include "loader/engine.h"
#include "resolver/cache_follower.h"
#include "resolver/fast_answers.h"

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ldshim::host {
class InOrderMatch;  // host/loaded_objects.h
}  // namespace ldshim::host

namespace ldshim::resolver {

using loader::Engine;
using loader::LdCache;

struct Resolution {
    // unresolved: the model cannot answer (no model for this process, or an
    // internal failure); the call is left to glibc unchanged.
    enum class Kind : std::uint8_t { loaded, found, not_found, unresolved } kind = Kind::not_found;
    std::string path;   // loaded: the object's l_name ("" for the main program); found: what to open
    std::string error;  // not_found: glibc's dlerror() text; unresolved: why
    // For logs: the calling object and the rule that decided.
    std::string caller;
    const char* rule = "";
    // The search learnt something glibc records and keeps (a directory's
    // status, a dropped list, an unusable cache).  glibc learns it only by
    // running the same search itself: handed a path, it would not, and its
    // own later searches (the new object's dependencies) would differ.
    bool record_changed = false;
    // loaded or found: the path is also a name of another loaded object (a file replaced
    // under a loaded one's path was loaded as a new object of the same
    // name): glibc, handed it, would return the first of them.
    bool path_names_another = false;
    // loaded or found: the name asked for is none glibc knew an object by
    // before this call (not its path, its SONAME, or a name already added):
    // glibc, called by the caller, would have added it to the object
    // (elf/dl-load.c: add_name_to_object), and a later DT_NEEDED of that
    // name would match it there.
    bool name_added = false;
    // found: an object the load brings in needs the name asked for, which
    // glibc matches to the object being loaded only because its search
    // added the name first; opened by its path, the load fails.
    bool name_needed_by_load = false;
};

class LiveProcess {
public:
    // The process-wide instance, built on first use; nullptr when another
    // thread has been building it for longer than a call waits.
    static LiveProcess* instance();

    // What glibc would do for dlopen(file) called from `caller` (any address
    // inside the calling object; one outside every object means the main
    // program), without loading anything.  `noload` is RTLD_NOLOAD.
    // `details` fills Resolution::caller and ::rule (for logs; costs a copy).
    // `new_namespace`: dlmopen(LM_ID_NEWLM) -- the search runs in a fresh
    // namespace, which the model then drops again (dl_iterate_phdr only
    // shows ldshim its own namespace, so it cannot follow that one).
    Resolution resolve(const void* caller, const char* file, bool noload, bool details = false,
                       bool new_namespace = false);

    // The already-loaded fast path: takes no lock, walks nothing, allocates
    // nothing.  True when `file` was answered "already loaded" (by one of
    // the object's names, so neither the caller nor the filesystem matter)
    // and the loader has added and removed nothing since; `handed` is then
    // the name to hand glibc for it (immortal text): `file` where glibc knows
    // the object by it (its l_name or SONAME), else its l_name; nullptr for
    // the main program.  False: ask resolve().
    bool loaded_fast(const char* file, const char*& handed) const noexcept;

    // Tell the model that a dlopen through ldshim loaded or failed, so the
    // next call sees the new objects (also caught by the counters).  `map`
    // is the link_map it returned, or nullptr (it failed, or the handle came
    // from another dlopen than glibc's and is not read).  If it added exactly
    // the one object the model expected, where that object is mapped is
    // kept, so that the next call can tell its unload, alone, without a walk
    // (opened_went_alone_locked).
    void note_opened(const void* map);

    // The instance if it was built, else nullptr (never builds it).
    static LiveProcess* existing();
    // fork(): lib/fork_handlers.cc holds the model's lock across it.
    void fork_prepare() { mu_.lock(); }
    void fork_release() { mu_.unlock(); }

private:
    LiveProcess();
    ~LiveProcess();
    static LiveProcess* build();
    void sync_locked();
    bool unchanged_locked();
    void remember_loaded(const std::string& name, const loader::Object& o);
    int object_at(std::uintptr_t addr);

    struct Range {
        std::uintptr_t hi;  // a PT_LOAD segment [lo, hi); lo is its key in ranges_
        int object;         // its model index
    };
    // An object as the walks saw it, keyed by where it is mapped (base and
    // program headers) and its name: an object still there at the next walk
    // is matched without copying or decoding anything (docs/performance.md,
    // "incremental reconciliation").
    using Key = std::pair<std::uintptr_t, const void*>;  // dlpi_addr, dlpi_phdr
    struct Known {
        Key key;
        std::string name;
        int object = 0;                        // model index (the main program's for an unnamed one)
        std::vector<std::uintptr_t> segments;  // its keys in ranges_
        std::size_t pos = 0;                   // in order_
        unsigned long long seen = 0;           // the last walk that saw it
    };
    // order_'s entries are contiguous and carry a copy of the name, so the
    // walk's check of each survivor reads two sequential arrays instead of
    // a map node and a heap string per object (a cache miss each).
    struct Expected {
        Key key;
        Known* known;
        std::size_t name_at;  // in order_names_, NUL-terminated
    };
    struct Fresh;
    struct Scan;
    Scan scan_locked();
    Known* match(const dl_phdr_info& info, host::InOrderMatch& in_order) noexcept;
    void apply_scan(Scan& s);
    bool same_as_last_walk(const Scan& s) const;
    void apply_changes(Scan& s);
    Known* add_known(Fresh& f, std::unordered_map<std::string, int>& pending);
    int adopt_fresh(Fresh& f);
    std::optional<loader::ProcessStart> process_start();
    void drop_known(const Known& k);
    void renumber(const std::vector<int>& remap);
    void note_added(std::size_t from);
    bool opened_went_alone_locked();
    void forget_pending_locked();

    std::map<std::uintptr_t, Range> ranges_;  // every walked object's segments, by start; patched at each walk
    std::map<Key, Known> known_;
    std::vector<Expected> order_;  // known_ in the last walk's order (new objects come last)
    std::string order_names_;
    // Model objects the engine added (startup, or a dlopen it answered
    // "found") that no walk has shown yet: the next walk matches them by
    // name, or they are forgotten (the real dlopen failed, or they went).
    std::vector<int> pending_;
    unsigned long long walks_ = 0;
    std::mutex mu_;
    host::RememberingFs fs_;
    CacheFollower cache_;  // ld.so.cache as glibc reads it; the engine reads its cache() by reference
    std::unique_ptr<Engine> engine_;
    std::string init_error_;
    std::size_t scan_room_ = 64;  // objects the last walk needed room for
    // The walk's room, kept between walks: made afresh, its text for every
    // object would be zeroed (and, when large, mapped and unmapped) on every
    // walk, a cost that grows with the number of objects loaded.
    struct ScanRoom;
    std::unique_ptr<ScanRoom> room_;
    // The object ldshim's last dlopen added (note_opened), while it is the
    // model's one pending object and nothing else changed.
    struct Opened {
        int object = -1;                // in the engine (pending_'s one entry)
        const void* dynamic = nullptr;  // its l_ld: inside its mapping while it is loaded
        Generation after;               // the loader's generation right after it was added
    };
    // Whether the model is in step with the loaded objects: everything the
    // loaded-set synchronisation (loaded_sync.cc) decides by, in one place.
    struct InStep {
        // The model holds objects no walk has confirmed yet (a dlopen it
        // answered, or note_opened): the next call walks.
        bool dirty = true;
        host::LoadCounters counters;  // dl_iterate_phdr's at the last walk
        Generation synced;            // the loader's generation the model was last reconciled with
        // The fast path's signal (host::loader_words), trusted only once a
        // walk confirmed it and never again after a walk contradicted it.
        std::atomic<bool> words_ok{false};
        bool words_bad = false;
        std::optional<Opened> opened;
    };
    InStep step_;
    host::LoaderWords words_;
    FastAnswers fast_;  // the already-loaded answers loaded_fast() gives
};

}  // namespace ldshim::resolver
