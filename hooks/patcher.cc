#include "hooks/patcher.h"

#include "hooks/events.h"
#include "hooks/object_scan.h"
#include "hooks/oplog.h"
#include "hooks/slot_writer.h"
#include "hooks/table.h"
#include "host/find_object.h"
#include "host/libc.h"
#include "host/loaded_objects.h"
#include "host/settings.h"
#include "ldshim.h"
#include "memtype/epoch.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <span>

namespace ldshim::hooks {

namespace {

// Whether `value` is anything but the function named `symbol` (dladdr's
// answer).  The common answer, the object's own export, comes from its hash
// table: dladdr walks every symbol of the object, a few thousand in libc.
bool is_foreign(std::uintptr_t value, const char* symbol) {
    if (host::exported_at(reinterpret_cast<const void*>(value), symbol)) return false;
    Dl_info info;
    if (!dladdr(reinterpret_cast<void*>(value), &info) || !info.dli_sname) return true;
    return reinterpret_cast<std::uintptr_t>(info.dli_saddr) != value || std::strcmp(info.dli_sname, symbol) != 0;
}

// Whether `a` and `b` are two different definitions of `symbol`, each
// exported by its object (another library's, another namespace's): a hook
// that calls one must not stand in for the other.  A non-PIE program's
// canonical PLT entry is no definition: it leads to one.
bool other_definition(std::uintptr_t a, std::uintptr_t b, const char* symbol) {
    return a != b && host::exported_at(reinterpret_cast<const void*>(a), symbol) &&
           host::exported_at(reinterpret_cast<const void*>(b), symbol);
}

unsigned path_of(int id) {
    auto hid = static_cast<HookId>(id);
    if (hid == HookId::k_dlsym || hid == HookId::k_dlvsym) return LDSHIM_PATH_DLSYM;
    return path_bit(hook_def(id).kind);
}

// What a lazily bound slot would have been bound to.  glibc binds a
// versioned reference to the first object in scope that defines the name
// with that version or as a default (non-hidden) definition -- that is how an
// unversioned LD_PRELOAD definition interposes on dlopen@GLIBC_2.34.  dlsym
// finds exactly that first default definition; dlvsym is only consulted for
// a hidden definition of the requested version in that same object.  The
// scope is the global one, then the object's own dependencies (an
// RTLD_LOCAL library's).
void* lookup_in(void* handle, const char* name, const std::string& version) {
    void* f = dlsym(handle, name);
    if (version.empty()) return f;
    void* v = dlvsym(handle, name, version.c_str());
    if (!f || !v || v == f) return f ? f : v;
    auto a = host::find_object(f), b = host::find_object(v);
    bool same_object = a && b && a->lo == b->lo;
    return same_object ? v : f;
}

void* resolve_unbound(const char* name, const std::string& version, const std::string& object) {
    void* f = lookup_in(RTLD_DEFAULT, name, version);
    if (!f) {
        if (void* h = dlopen(object.empty() ? nullptr : object.c_str(), RTLD_LAZY | RTLD_NOLOAD)) {
            f = lookup_in(h, name, version);
            dlclose(h);
        }
    }
    // A miss leaves an error behind, which the program's next dlerror()
    // would report as its own.
    (void)dlerror();
    return f;
}

// Keep libldshim mapped forever once it has written a hook anywhere.
void pin_self() {
    auto self = host::find_object(reinterpret_cast<const void*>(&pin_self));
    const auto* map = self ? static_cast<const link_map*>(self->link_map) : nullptr;
    if (map && map->l_name && *map->l_name) host::libc_dlopen(map->l_name, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
}

}  // namespace

namespace {
std::atomic<Patcher*> g_engine{nullptr};  // once built (lib/fork_handlers.cc)
}  // namespace

Patcher& Patcher::instance() {
    static Patcher* e = [] {
        auto* en = new Patcher;  // never destroyed: hooks outlive static destructors
        g_engine.store(en, std::memory_order_release);
        return en;
    }();
    return *e;
}

Patcher* Patcher::existing() { return g_engine.load(std::memory_order_acquire); }

// A pass holds the engine's lock, then the log's: taken in that order.
void Patcher::fork_prepare() {
    mu_.lock();
    OpLog::global().fork_prepare();
}

void Patcher::fork_release() {
    OpLog::global().fork_release();
    mu_.unlock();
}

bool Patcher::in_ldshim(std::uintptr_t addr) const {
    return std::any_of(ldshim_ranges_.begin(), ldshim_ranges_.end(),
                       [&](const Range& r) { return addr >= r.lo && addr < r.hi; });
}

namespace {

// What each object's dlopen and dlmopen slots held before ldshim's front
// entry: the entry calls exactly that, so a tool that took over one
// object's slot is not handed the calls of another.  One immutable table,
// rebuilt after a pass and swapped; readers (the front entries) take no
// lock: they read under the registry's epoch reclamation, and a replaced
// table is freed only once no reader can still be inside it.
struct LoaderRow {
    std::uintptr_t lo, hi;  // the object's extent
    void* next[2];          // dlopen's, dlmopen's; null: not hooked there
};
struct LoaderTable {
    std::vector<LoaderRow> rows;  // sorted by lo
};
std::atomic<const LoaderTable*> g_loader_table{nullptr};
struct Retired {
    const LoaderTable* table;
    std::uint64_t epoch;
};
std::vector<Retired> g_retired;  // under the engine's lock

bool same_rows(const std::vector<LoaderRow>& a, const std::vector<LoaderRow>& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const LoaderRow& x, const LoaderRow& y) {
        return x.lo == y.lo && x.hi == y.hi && x.next[0] == y.next[0] && x.next[1] == y.next[1];
    });
}

int loader_index(int id) {
    auto h = static_cast<HookId>(id);
    return h == HookId::k_dlopen ? 0 : h == HookId::k_dlmopen ? 1 : -1;
}

}  // namespace

void* loader_next(HookId id, const void* caller) {
    int k = loader_index(static_cast<int>(id));
    auto a = reinterpret_cast<std::uintptr_t>(caller);
    if (k >= 0) {
        memtype::EpochDomain::Guard guard(memtype::EpochDomain::instance());
        if (const LoaderTable* t = g_loader_table.load(std::memory_order_acquire)) {
            auto it = std::upper_bound(t->rows.begin(), t->rows.end(), a,
                                       [](std::uintptr_t x, const LoaderRow& r) { return x < r.lo; });
            if (it != t->rows.begin() && a < (--it)->hi && it->next[k]) return it->next[k];
        }
    }
    return g_next[static_cast<int>(id)].load(std::memory_order_acquire);
}

void Patcher::publish_loader_targets_locked() {
    // No patch and no table yet: nothing to publish (and no table to build
    // and free: free is one more libc function to bind at start-up).
    if (patches_.empty() && !g_loader_table.load(std::memory_order_acquire)) return;
    auto table = std::make_unique<LoaderTable>();
    for (const auto& [slot, p] : patches_) {
        int k = loader_index(p.id);
        auto found = k < 0 ? std::nullopt : host::find_object(reinterpret_cast<void*>(slot));
        if (!found) continue;
        std::uintptr_t lo = found->lo;
        auto it = std::find_if(table->rows.begin(), table->rows.end(), [&](const LoaderRow& r) { return r.lo == lo; });
        if (it == table->rows.end()) it = table->rows.insert(table->rows.end(), {lo, found->hi, {nullptr, nullptr}});
        it->next[k] = reinterpret_cast<void*>(p.target);
    }
    std::sort(table->rows.begin(), table->rows.end(),
              [](const LoaderRow& a, const LoaderRow& b) { return a.lo < b.lo; });
    // The same table again (the pass before main finds what the constructor's
    // pass wrote) is not swapped: no epoch to advance, no reclamation round.
    const LoaderTable* current = g_loader_table.load(std::memory_order_acquire);
    if (current ? same_rows(current->rows, table->rows) : table->rows.empty()) return;
    const LoaderTable* old = g_loader_table.exchange(table.release(), std::memory_order_acq_rel);
    if (!old && g_retired.empty()) return;  // the first table: nothing to reclaim
    auto& epochs = memtype::EpochDomain::instance();
    if (old) g_retired.push_back({old, epochs.advance()});
    std::uint64_t oldest = epochs.oldest_reader();
    std::erase_if(g_retired, [&](const Retired& r) {
        if (r.epoch >= oldest) return false;
        delete r.table;
        return true;
    });
}

int Patcher::install(unsigned flags) {
    if (flags == 0 || (flags & ~(LDSHIM_HOOK_CUDA | LDSHIM_HOOK_DLOPEN))) return LDSHIM_ERR_INVALID_ARGUMENT;
    if (!machine::kSlotsKnown || ((flags & LDSHIM_HOOK_CUDA) && !cuda_hooks_built())) return LDSHIM_ERR_UNSUPPORTED;
    if (host::settings().disabled) return LDSHIM_OK;  // LDSHIM_DISABLE: inert, as asked
    std::lock_guard lock(mu_);
    if (nothing_new_locked(flags)) return LDSHIM_OK;
    installed_ = true;
    // A set added later must reach objects already scanned for another one.
    if ((flags_ | flags) != flags_) {
        rescan_all_locked();
        known_.clear();  // the slots wanted depend on the sets
        known_hits_.clear();
    }
    flags_ |= flags;
    g_recording.store(true, std::memory_order_release);
    try {
        pass_locked(true);
    } catch (const std::bad_alloc&) {
        return LDSHIM_ERR_NO_MEMORY;
    }
    return LDSHIM_OK;
}

// Whether a full pass for `flags` would find what the last one found:
// nothing.  No object was loaded or unloaded since a complete pass for
// these sets that found no slot they want, so no slot can hold anything to
// look at (the pass before main, in a program that imports no dlopen).
bool Patcher::nothing_new_locked(unsigned flags) const {
    if (!installed_ || (flags_ | flags) != flags_ || retry_ || !known_hits_.empty() || !patches_.empty()) return false;
    host::LoadCounters c = host::load_counters();
    return c.adds != 0 && c == seen_ && known_subs_ == seen_.subs;
}

int Patcher::refresh() {
    std::lock_guard lock(mu_);
    if (!installed_) return LDSHIM_OK;
    host::LoadCounters c = host::load_counters();
    if (c == seen_ && !retry_) return LDSHIM_OK;
    try {
        pass_locked(c.subs != seen_.subs);
    } catch (const std::bad_alloc&) {
        return LDSHIM_ERR_NO_MEMORY;
    }
    return LDSHIM_OK;
}

bool Patcher::reclaim_loader_slots(std::uintptr_t lo, std::uintptr_t hi) {
    std::unique_lock lock(mu_, std::try_to_lock);
    if (!lock.owns_lock() || !installed_) return false;  // a pass is running: it sees the slots
    bool any = false, theirs = false;
    // A slot is taken when it holds neither ldshim's entry nor a value in
    // its own object (a lazy slot not bound yet) nor one in ldshim.  Read
    // only while the object is still known (an unloaded one's record
    // survives until the next full pass).
    auto look = [&](std::uintptr_t slot, std::uintptr_t hook) {
        auto own = host::find_object(reinterpret_cast<void*>(slot));
        if (!own) return;
        auto v = __atomic_load_n(reinterpret_cast<std::uintptr_t*>(slot), __ATOMIC_ACQUIRE);
        if (v == hook || own->contains(v) || in_ldshim(v)) return;
        any = true;
        theirs = theirs || (v >= lo && v < hi);
    };
    for (const auto& [slot, p] : patches_) {
        auto id = static_cast<HookId>(p.id);
        if (id == HookId::k_dlopen || id == HookId::k_dlmopen) look(slot, p.hook);
    }
    for (const auto& [slot, id] : watched_) look(slot, 0);
    if (any) {
        try {
            pass_locked(true);
        } catch (const std::bad_alloc&) {
        }
    }
    return theirs;
}

// What a scan copies under the loader's lock (loaded_objects.h): plain data,
// the object's name and the import's version copied into the text.
struct RawCandidate {
    std::uintptr_t base, slot, value;
    int id;
    bool lazy, plainly_writable;
    std::size_t object, version;  // offsets in the text; npos: none
};
// What a walk learned of an object: whether it is ldshim's, and, scanned for
// the first time, its wanted slots (hits[first, first + count)).  One per
// loaded object at every pass: 24 bytes.
struct RawObject {
    std::uintptr_t base;
    std::uint32_t first = 0, count = 0;  // its hits in the room (an object new to the patcher)
    std::uint32_t known;                 // its index in the patcher's list, or kNew
    bool ldshim = false;
    bool looked = false;  // a known object whose wanted slots this walk read again
};
constexpr std::uint32_t kNew = static_cast<std::uint32_t>(-1);
static_assert(sizeof(RawObject) == 24);
struct RawHit {
    std::uintptr_t slot;
    int id;
    std::size_t version;  // offset in the text; npos: none
};
using host::Segment;
struct ScanRoom {
    host::Scratch<RawCandidate> found;
    host::Scratch<std::uintptr_t> confirmed;  // slots holding a hook
    host::Scratch<RawObject> scanned;
    host::Scratch<RawHit> hits;
    host::Scratch<Segment> ldshim;  // segments of objects carrying the marker
    host::ScratchText text;
    host::LoadCounters counters;
    bool half_loaded = false;
    std::uintptr_t libc_base = 0;    // libc's load address (0: unknown), kept across resets
    bool relayed_elsewhere = false;  // an object but libc may define a relayed name

    host::ScratchBlock block;  // the room of all the lists above

    // Room for `n` objects in every list: the walk's record of each comes
    // first, the lists most walks leave empty after it.
    void reset(std::size_t n) {
        block.lay_out(host::ListRoom{scanned, n}, host::ListRoom{ldshim, n}, host::ListRoom{hits, n},
                      host::ListRoom{found, n}, host::ListRoom{confirmed, n}, host::ListRoom{text, n * 64});
        relayed_elsewhere = false;
        half_loaded = false;
    }
    bool overflowed() const {
        return found.overflowed() || confirmed.overflowed() || scanned.overflowed() || hits.overflowed() ||
               ldshim.overflowed() || text.overflowed();
    }
    std::string string_at(std::size_t off) const {
        return off == host::ScratchText::npos ? std::string() : text.at(off);
    }
    void push_segments(const dl_phdr_info& info) {
        host::for_each_segment(info, [&](const Segment& g) { ldshim.push(g); });
    }
    // A wanted slot of the object being visited: confirmed if it holds the
    // hook, else a candidate (the object's name copied with its first one).
    void take(const dl_phdr_info& info, const ObjectImports& obj, std::uintptr_t slot, int id, const char* version,
              std::size_t& name) {
        const HookDef& def = hook_def(id);
        auto value = __atomic_load_n(reinterpret_cast<std::uintptr_t*>(slot), __ATOMIC_ACQUIRE);
        if (value == reinterpret_cast<std::uintptr_t>(def.fn)) {
            confirmed.push(slot);
            return;
        }
        if (value == 0) return;  // an unresolved weak reference: nothing to call
        if (name == host::ScratchText::npos) name = text.put_string(info.dlpi_name);
        std::size_t v = version ? text.put_string(version) : host::ScratchText::npos;
        found.push({info.dlpi_addr, slot, value, id, obj.contains(value), obj.plainly_writable(slot), name, v});
    }
};

namespace {

// What is known of the object at `base` among `known` (in the order of the
// walk that recorded them), or nullptr: valid while no object went away
// (none can have taken its base) and the loader reports its counters.
// Matched in the walk's order (host::InOrderMatch).  Inside the walk: no
// allocation.
class KnownFinder {
public:
    KnownFinder(std::span<KnownObject> known, unsigned long long known_subs) : known_(known), subs_(known_subs) {}
    KnownObject* operator()(std::uintptr_t base, const host::LoadCounters& now) {
        if (known_.empty() || now.adds == 0 || now.subs != subs_) return nullptr;
        const std::size_t i = in_order_(known_.size(), [&](std::size_t j) { return known_[j].base == base; });
        return i == host::InOrderMatch::npos ? nullptr : &known_[i];
    }

private:
    std::span<KnownObject> known_;
    unsigned long long subs_;
    host::InOrderMatch in_order_;
};

// An object scanned before (the `index`th known): only its wanted slots are
// read again.
void rescan_known(const dl_phdr_info& info, const KnownObject& k, std::uint32_t index,
                  const std::vector<KnownHit>& hits, ScanRoom& room) {
    if (k.ldshim) room.push_segments(info);
    const bool half_loaded = k.count != 0 && !relocated(info);
    if (half_loaded) room.half_loaded = true;  // being unloaded by another thread: look again later
    room.scanned.push({.base = info.dlpi_addr,
                       .known = index,
                       .ldshim = k.ldshim,
                       .looked = !half_loaded});  // what is known of it stays
    if (half_loaded || k.ldshim || k.count == 0) return;
    ObjectImports obj(info);
    std::size_t name = host::ScratchText::npos;
    for (std::size_t i = k.first; i < k.first + k.count; ++i)
        room.take(info, obj, hits[i].slot, hits[i].id, hits[i].version.empty() ? nullptr : hits[i].version.c_str(),
                  name);
}

// strcmp(a, b) == 0, by hand: strcmp would be one more libc function to
// bind at start-up.
bool same_name(const char* a, const char* b) {
    while (*a && *a == *b) ++a, ++b;
    return *a == *b;
}

// What the preload hands on to the next definition (RTLD_NEXT) before main:
// glibc's own, unless another object defines it.  (Its dlopen and dlmopen
// are looked up at their first call, outside every start-up.)
constexpr ObjectImports::Name kRelayed[] = {{"dlerror", loader::gnu_hash("dlerror")},
                                            {"__libc_start_main", loader::gnu_hash("__libc_start_main")}};

// A slot the hooks want in an object seen for the first time, unless its
// version or addend rules it out.  Out of line: inlined into scan_new, it
// cost the loop over every relocation a register (one instruction more per
// relocation).
[[gnu::noinline]] void take_hit(const dl_phdr_info& info, const ObjectImports& obj, const Import& imp, ScanRoom& room,
                                std::size_t& name) {
    int id = find_hook(imp.name);
    const HookDef& def = hook_def(id);
    if (def.version && imp.version && std::strcmp(def.version, imp.version) != 0) return;
    if (imp.kind == machine::SlotKind::abs64 && imp.addend != 0) return;
    room.hits.push({imp.slot, id, imp.version ? room.text.put_string(imp.version) : host::ScratchText::npos});
    room.take(info, obj, imp.slot, id, imp.version, name);
}

// An object seen for the first time: its relocations decoded (the names
// first), the slots the hooks want recorded for the next passes.
void scan_new(const dl_phdr_info& info, unsigned flags, ScanRoom& room) {
    ObjectImports obj(info);
    if (obj.has_ldshim_marker()) {
        room.push_segments(info);
        room.scanned.push({.base = info.dlpi_addr, .known = kNew, .ldshim = true});
        return;
    }
    if (info.dlpi_addr != room.libc_base && obj.may_define_any(kRelayed)) room.relayed_elsewhere = true;
    const auto first = static_cast<std::uint32_t>(room.hits.items().size());
    // Whether its relocations are done matters only for the values of its
    // slots, so it is asked at the first slot the hooks want: most objects
    // have none, and its names and relocations do not change while it is
    // loaded.
    enum { unknown, ready, half_loaded } state = unknown;
    std::size_t name = host::ScratchText::npos;
    auto wanted = [flags](const char* n) {
        if (!may_be_hooked(n)) return false;
        int id = find_hook(n);
        return id >= 0 && in_hook_set(id, flags);
    };
    obj.for_each(wanted, [&](const Import& imp) {
        if (state == unknown) state = relocated(info) ? ready : half_loaded;
        if (state != half_loaded) take_hit(info, obj, imp, room, name);
    });
    if (state == half_loaded) {
        room.half_loaded = true;  // being loaded (or unloaded) by another thread: look again later
        return;
    }
    room.scanned.push({.base = info.dlpi_addr,
                       .first = first,
                       .count = static_cast<std::uint32_t>(room.hits.items().size() - first),
                       .known = kNew});
}

}  // namespace

void* Patcher::libc_next(const char* name) {
    // No lock: a pass's own lookups reach here (decide_locked's dlerror
    // lands in the preload's, which asks for the next one).
    if (relayed_.load(std::memory_order_acquire) != Relayed::libc_only) return nullptr;
    for (const ObjectImports::Name& r : kRelayed)
        if (same_name(r.name, name)) return host::libc_symbol(name);
    return nullptr;
}

// After the walk: what is known, in the walk's order, the objects scanned
// for the first time included (all of it replaced when an object went away
// since the last scan).
void Patcher::remember_locked(const ScanRoom& room) {
    if (room.counters.adds == 0) return;  // no counters: nothing can be known to stay
    if (room.counters.subs != known_subs_) {
        known_.clear();
        known_hits_.clear();
        known_subs_ = room.counters.subs;
    }
    std::vector<KnownObject> now;
    now.reserve(room.scanned.items().size());
    for (const RawObject& o : room.scanned.items()) {
        if (o.known != kNew) {
            now.push_back(known_[o.known]);
            if (o.looked) now.back().visited = visit_epoch_;
            continue;
        }
        now.push_back({.base = o.base,
                       .visited = visit_epoch_,
                       .first = static_cast<std::uint32_t>(known_hits_.size()),
                       .count = o.count,
                       .ldshim = o.ldshim});
        for (std::size_t i = o.first; i < o.first + o.count; ++i) {
            const RawHit& h = room.hits.items()[i];
            known_hits_.push_back({h.slot, h.id, room.string_at(h.version)});
        }
    }
    known_.swap(now);
}

Patcher::Scan Patcher::scan_locked() {
    if (!room_) room_ = new ScanRoom;  // kept: the next pass reuses its reserved room
    ScanRoom& room = *room_;
    // Room for every loaded object at once: a walk that runs out is made
    // again, and a process of many libraries would walk them all twice.
    host::LoadCounters c = host::load_counters();
    scan_room_ = std::max<std::size_t>(scan_room_, c.adds - c.subs + 16);
    KnownFinder find_known(known_, known_subs_);
    room.libc_base = host::libc_load_address();
    host::walk_with_room(room, scan_room_, [&](const dl_phdr_info& info, const host::LoadCounters& now) {
        room.counters = now;
        const KnownObject* k = find_known(info.dlpi_addr, now);
        const std::uint32_t index = k ? static_cast<std::uint32_t>(k - known_.data()) : kNew;
        if (k && k->visited == visit_epoch_) {
            // Scanned since the last full pass: only ldshim's own segments are
            // listed again.
            if (k->ldshim) room.push_segments(info);
            room.scanned.push({.base = info.dlpi_addr, .known = index, .ldshim = k->ldshim});
        } else if (k) {
            rescan_known(info, *k, index, known_hits_, room);
        } else {
            scan_new(info, flags_, room);
        }
        return true;
    });

    // The copies become the engine's records, outside the lock.
    seen_ = room.counters;
    retry_ = room.half_loaded;
    if (relayed_.load(std::memory_order_relaxed) != Relayed::elsewhere)
        relayed_.store(room.relayed_elsewhere || !room.libc_base ? Relayed::elsewhere : Relayed::libc_only,
                       std::memory_order_release);
    ldshim_ranges_.clear();
    ldshim_ranges_.reserve(room.ldshim.items().size());
    for (const Segment& g : room.ldshim.items()) ldshim_ranges_.push_back({g.lo, g.hi});
    remember_locked(room);
    Scan out;
    out.confirmed.assign(room.confirmed.items().begin(), room.confirmed.items().end());
    std::sort(out.confirmed.begin(), out.confirmed.end());
    for (const RawCandidate& r : room.found.items())
        out.found.push_back({r.base, r.slot, r.value, r.id, r.lazy, r.plainly_writable, room.string_at(r.object),
                             room.string_at(r.version)});
    return out;
}

void Patcher::pass_locked(bool full, bool patch) {
    if (full) {
        rescan_all_locked();
        if (!watched_.empty()) watched_.clear();  // clear() zeroes every bucket even when empty: a memset to bind
    }
    // 1. Scan (inside the loader lock: reads only).
    Scan scan = scan_locked();
    if (full)
        std::erase_if(patches_, [&](const auto& kv) {
            return !std::binary_search(scan.confirmed.begin(), scan.confirmed.end(), kv.first);
        });
    if (!patch) {
        rescan_all_locked();
        return;
    }
    // 2. Decide what each hook calls (lookups: outside the loader lock).
    std::vector<Candidate> todo = decide_locked(std::move(scan.found));
    // 3. Write (inside the loader lock again), and log.
    write_and_record_locked(todo);
    if (full || !todo.empty()) publish_loader_targets_locked();
}

std::vector<Patcher::Candidate> Patcher::decide_locked(std::vector<Candidate> found) {
    std::vector<Candidate> todo;
    for (Candidate& c : found) {
        const HookDef& def = hook_def(c.id);
        bool loader = def.kind == HookKind::loader;
        // What a call through the slot reaches today: the bound value, or for
        // an unbound lazy slot what the loader would bind it to.  A slot
        // that leads to ldshim's preload already is left alone, and watched.
        std::uintptr_t target = c.value;
        if (!(loader && in_ldshim(target)) && c.lazy)
            target = reinterpret_cast<std::uintptr_t>(resolve_unbound(def.name, c.version, c.object));
        if (loader && (in_ldshim(c.value) || in_ldshim(target))) {
            watched_[c.slot] = c.id;
            continue;
        }
        if (!target) continue;
        void* current = nullptr;
        void* v = reinterpret_cast<void*>(target);
        bool theirs = is_foreign(target, def.name);
        if (publish_next(c.id, v, &current)) {
            adopt_companions(v, def.kind);
        } else if (other_definition(target, reinterpret_cast<std::uintptr_t>(current), def.name)) {
            continue;  // the hook would call the published definition instead of this slot's
        } else if (current != v && theirs && !is_foreign(reinterpret_cast<std::uintptr_t>(current), def.name)) {
            // Another hooker took this function over.  If the hook was handed
            // out by name, that tool may hold it as its original (UCX's ucm
            // looks its original up so): chained behind it, the hook would call
            // it back for ever.  Its slot is left to it -- its calls reach the
            // hook anyway.  Else every hook call goes through it, so it sees the
            // calls it asked to see.
            if (g_handed_out[c.id].load(std::memory_order_acquire)) continue;
            replace_next(c.id, v);
        }
        c.foreign = theirs;
        c.target = target;
        todo.push_back(std::move(c));
    }
    return todo;
}

void Patcher::write_and_record_locked(std::vector<Candidate>& todo) {
    // Pinned before the first hook is written, not at install: a process
    // with no slot to write never pays for the lookup by name.
    if (!todo.empty() && !pinned_) {
        pin_self();
        pinned_ = true;
    }
    std::vector<SlotWrite> writes;
    writes.reserve(todo.size());
    for (const Candidate& c : todo)
        writes.push_back(
            {c.base, c.slot, c.value, reinterpret_cast<std::uintptr_t>(hook_def(c.id).fn), c.plainly_writable});
    write_slots(writes);
    unsigned paths = 0;
    std::vector<Op> ops;
    for (std::size_t i = 0; i < todo.size(); ++i) {
        const Candidate& c = todo[i];
        const HookDef& def = hook_def(c.id);
        auto hook = reinterpret_cast<std::uintptr_t>(def.fn);
        WriteResult result = writes[i].result;
        if (result == WriteResult::unloading) {  // not written: the next pass scans the object again
            retry_ = true;
            if (KnownObject* k = KnownFinder(known_, known_subs_)(c.base, seen_)) k->visited = 0;
            continue;
        }
        Op op{c.object,
              def.name,
              c.version,
              c.slot,
              c.value,
              hook,
              reinterpret_cast<std::uintptr_t>(g_next[c.id].load()),
              OpStatus::patched,
              {}};
        if (result == WriteResult::written) {
            op.status = c.foreign ? OpStatus::chained : OpStatus::patched;
            if (c.lazy) op.detail = "lazy slot, not bound yet";
            patches_[c.slot] = {c.slot, c.value, hook, c.base, c.id, c.plainly_writable, c.object, c.target};
            paths |= path_of(c.id);
        } else {
            op.status = OpStatus::failed;
            op.new_value = c.value;
            op.detail = describe(result);
        }
        ops.push_back(std::move(op));
    }
    g_active_paths.fetch_or(paths, std::memory_order_relaxed);
    for (Op& op : ops) OpLog::global().append(std::move(op));
}

int Patcher::uninstall() {
    std::lock_guard lock(mu_);
    if (!installed_) return LDSHIM_OK;
    g_recording.store(false, std::memory_order_release);
    try {
        pass_locked(true, false);  // drop the records of objects that went away
        std::vector<const Patch*> restoring;
        std::vector<SlotWrite> writes;
        for (const auto& kv : patches_) {
            const Patch& p = kv.second;
            restoring.push_back(&p);
            writes.push_back({p.base, p.slot, p.hook, p.original, p.plainly_writable});
        }
        write_slots(writes);
        std::vector<Op> ops;
        for (std::size_t k = 0; k < writes.size(); ++k) {
            const Patch& p = *restoring[k];
            WriteResult result = writes[k].result;
            if (result == WriteResult::unmapped) continue;  // its object went away since the pass
            Op op{p.object, hook_def(p.id).name, {}, p.slot, p.hook, p.original, 0, OpStatus::restored, {}};
            if (result == WriteResult::changed) {
                op.status = OpStatus::left;
                op.new_value = __atomic_load_n(reinterpret_cast<std::uintptr_t*>(p.slot), __ATOMIC_RELAXED);
                op.old_value = op.new_value;
                op.detail = "someone else rewrote the slot since; left as it is";
            } else if (result != WriteResult::written) {
                op.status = OpStatus::failed;
                op.new_value = p.hook;
                op.detail = describe(result);
            }
            ops.push_back(std::move(op));
        }
        for (Op& op : ops) OpLog::global().append(std::move(op));
    } catch (const std::bad_alloc&) {
        return LDSHIM_ERR_NO_MEMORY;
    }
    patches_.clear();
    rescan_all_locked();
    watched_.clear();
    installed_ = false;
    flags_ = 0;
    g_active_paths.store(0, std::memory_order_relaxed);
    return LDSHIM_OK;
}

}  // namespace ldshim::hooks
