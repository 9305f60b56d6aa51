#include "resolver/live_process.h"

#include "host/dir_record.h"
#include "host/find_object.h"
#include "host/libc.h"
#include "host/loaded_objects.h"
#include "host/loader_in_process.h"
#include "host/mapped_files.h"
#include "host/settings.h"
#include "host/start_capture.h"
#include "host/startup_env.h"
#include "loader/loaded_extent.h"
#include "loader/paths.h"
#include "machine/machine.h"

#include <pthread.h>

#include <fcntl.h>
#include <link.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <span>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>

namespace ldshim::resolver {

using namespace ldshim::loader;  // NOLINT(google-build-using-namespace): the model is the engine's
namespace {

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

// The instance once built (lib/fork_handlers.cc locks only what exists).
std::atomic<LiveProcess*> g_existing{nullptr};
std::atomic<int> g_building{0};  // 1 once a thread has begun building it
// How long a call waits for another thread to finish building the model.
constexpr int kBuildWaitMs = 2000;

}  // namespace

// An object the last walk could not match, decoded after the walk.
struct LiveProcess::Fresh {
    Key key;
    std::string name;
    std::vector<std::pair<std::uintptr_t, std::uintptr_t>> segments;  // PT_LOAD, [lo, hi)
    std::optional<FactsResult> facts;                                 // read for objects the model does not know
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

LiveProcess* LiveProcess::instance() {
    for (int waited_ms = 0;; ++waited_ms) {
        if (LiveProcess* lp = g_existing.load(std::memory_order_acquire)) return lp;
        int none = 0;
        if (g_building.compare_exchange_strong(none, 1, std::memory_order_acq_rel)) return build();
        // Another thread builds it.  Wait, but not for ever: the builder
        // dlopens (the loader probe), so it may be waiting for the loader's
        // lock, which this thread can hold (a constructor that calls
        // dlopen).  Past the wait, the call passes through instead of
        // deadlocking.
        if (waited_ms >= kBuildWaitMs) return nullptr;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
}

LiveProcess* LiveProcess::build() {
    // Never destroyed: dlopen may be called from other threads during exit.
    alignas(LiveProcess) static unsigned char storage[sizeof(LiveProcess)];
    try {
        auto* lp = new (storage) LiveProcess();
        g_existing.store(lp, std::memory_order_release);
        return lp;
    } catch (...) {
        g_building.store(0, std::memory_order_release);  // the next call tries again
        throw;
    }
}

LiveProcess* LiveProcess::existing() { return g_existing.load(std::memory_order_acquire); }

struct LiveProcess::ScanRoom {
    host::Scratch<Step> steps;
    host::Scratch<Visited> objects;
    host::Scratch<Segment> segments;
    host::ScratchText text;
    host::LoadCounters counters;
    WordsSeen words;
    std::size_t cursor = 0;  // where in the last walk's order the next object is expected

    host::ScratchBlock block;  // the room of the lists above

    void reset(std::size_t n) {
        block.lay_out(host::ListRoom{objects, n}, host::ListRoom{steps, n}, host::ListRoom{segments, 4 * n},
                      host::ListRoom{text, 256 * n});
        cursor = 0;
        words = {};
    }
    bool overflowed() const {
        return steps.overflowed() || objects.overflowed() || segments.overflowed() || text.overflowed();
    }
};

LiveProcess::~LiveProcess() = default;

LiveProcess::LiveProcess() : room_(std::make_unique<ScanRoom>()) {
    std::string exe = "/proc/self/exe";
    auto img = fs_.open(exe);
    if (!img.image) {
        init_error_ = "cannot read /proc/self/exe";
        return;
    }
    // The loader's configuration is read in process: running `ld.so --help`
    // (or keeping its answer under $HOME) is not acceptable inside someone
    // else's process.  Where it cannot be derived exactly, ldshim does not
    // guess: every request is "unresolved", i.e. left to glibc's own dlopen, and
    // LDSHIM_DEBUG shows this reason with each of them.
    // What ld.so read at start-up, not the environment now: a setenv since
    // changed nothing of the loader's search.
    std::string err;
    auto env = host::startup_environment(&err);
    if (!env) {
        init_error_ = "ldshim cannot model this process's loader (" + err + "); dlopen is left to glibc";
        return;
    }
    auto cfg = host::derive_in_process(*env, &err);
    if (!cfg) {
        init_error_ = "ldshim cannot model this process's loader (" + err + "); dlopen is left to glibc";
        return;
    }
    const bool secure = getauxval(AT_SECURE) != 0;
    cache_.start(cfg->cache_path);
    EngineOptions o;
    o.argv0 = host::argv0();
    o.secure = secure;
    set_environment(o, env->vars);
    // Read as ld.so reads it, not resolved through /proc: a program deleted
    // while it runs keeps its directory, and under qemu-user in a chroot
    // without /proc the emulated link still answers.
    o.main_origin = host::main_program_origin(*env, secure);
    o.keep_going = true;  // a library the emulation cannot find is simply not in the model
    engine_ = std::make_unique<Engine>(std::move(*cfg), fs_, cache_.cache(), nullptr, o);
    // What the start-up loaded is taken from memory, as the loader holds
    // it: its files may have been replaced or removed since, or named from
    // another current directory.
    engine_->start(exe, std::move(img), process_start());  // opened once: a second open may find no /proc
    // The start-up searches were glibc's own, against the directories as
    // they were then: what glibc recorded of each is the truth, where it can
    // be read (else the emulation's, from the directories as they are now).
    if (auto record = host::read_dir_record(engine_->config().subdirs.size()))
        for (const auto& d : *record) engine_->take_dir_status(d.dirname, d.status);
    // glibc read the cache at start-up, if a search needed it; the
    // emulation read it now.  Only a file unchanged since the process
    // started says whether glibc gave it up then.
    if (cache_.unchanged_since_start()) cache_.note_use(engine_->cache_lookups());
    engine_->set_keep_going(false);
    engine_->set_before_cache_lookup([this] { cache_.before_lookup(); });
    note_added(0);
    words_ = host::loader_words();
}

bool LiveProcess::loaded_fast(const char* file, const char*& handed) const noexcept {
    Generation now;
    if (!words_ok_.load(std::memory_order_acquire) || !read_generation(words_, now)) return false;
    return FastAnswers::lookup(file, now, handed);
}

// Under mu_, after sync_locked(): `name` is the loaded object `o` at synced_.
void LiveProcess::remember_loaded(const std::string& name, const Object& o) {
    if (words_ok_.load(std::memory_order_relaxed)) fast_.remember(name, o, synced_);
}

// Whether the loader added or removed nothing since the model was last
// reconciled (and the model itself added nothing since).
bool LiveProcess::unchanged_locked() {
    if (dirty_) return false;
    Generation now;
    if (words_ok_.load(std::memory_order_relaxed) && read_generation(words_, now)) return now == synced_;
    auto [adds, subs] = host::load_counters();
    return adds == adds_ && subs == subs_;
}

// The known object at this place with this name, if any: first where the
// last walk's order expects it (survivors keep their order and new objects
// are appended, so this is nearly always the one), else by its key.  Runs
// inside the walk: no allocation, no call that may be wrapped.
LiveProcess::Known* LiveProcess::match(std::uintptr_t addr, const void* phdr, const char* name,
                                       std::size_t cursor) noexcept {
    const Key key{addr, phdr};
    if (cursor < order_.size() && order_[cursor].key == key)
        return std::strcmp(order_names_.data() + order_[cursor].name_at, name) == 0 ? order_[cursor].known : nullptr;
    auto it = known_.find(key);
    return it != known_.end() && std::strcmp(it->second.name.c_str(), name) == 0 ? &it->second : nullptr;
}

// One walk of dl_iterate_phdr (namespace 0, the one the model covers).  An
// object already known is matched in place; only the others are copied, and
// everything that reads their memory happens inside the walk, where the
// loader's lock keeps another thread's dlclose from unmapping them.
LiveProcess::Scan LiveProcess::scan_locked() {
    // Names whose facts the model has (pending_): views into the engine's
    // objects, which do not move before the walk ends.
    std::vector<std::string_view> modelled;
    modelled.reserve(pending_.size());
    for (int i : pending_) modelled.emplace_back(engine_->objects()[static_cast<std::size_t>(i)].name);
    std::sort(modelled.begin(), modelled.end());
    ScanRoom& room = *room_;
    host::walk_with_room(room, scan_room_, [&](const dl_phdr_info& info, const host::LoadCounters& now) {
        room.counters = now;
        if (words_ && room.steps.items().empty() && !room.steps.overflowed())
            room.words = {*words_.adds, *words_.nloaded, *words_.write_lock, *words_.nns, true};
        const char* name = info.dlpi_name ? info.dlpi_name : "";
        if (Known* k = match(info.dlpi_addr, info.dlpi_phdr, name, room.cursor)) {
            room.cursor = k->pos + 1;
            room.steps.push({k, 0});
            return true;
        }
        Visited v{info.dlpi_addr,
                  info.dlpi_phdr,
                  room.text.put_string(name),
                  room.segments.items().size(),
                  0,
                  host::ScratchText::npos,
                  0,
                  host::ScratchText::npos,
                  0};
        for (std::size_t i = 0; i < info.dlpi_phnum; ++i) {
            const ElfW(Phdr)& ph = info.dlpi_phdr[i];
            if (ph.p_type == PT_LOAD &&
                room.segments.push({info.dlpi_addr + ph.p_vaddr, info.dlpi_addr + ph.p_vaddr + ph.p_memsz}))
                ++v.segments;
        }
        if (*name && !std::binary_search(modelled.begin(), modelled.end(), std::string_view(name))) {
            v.facts_size = copy_loaded_facts(info.dlpi_addr, info.dlpi_phdr, info.dlpi_phnum, room.text.tail());
            v.facts = room.text.commit(v.facts_size);
            const LoadedExtent extent{info.dlpi_phdr, info.dlpi_phnum, info.dlpi_addr};
            if (auto id = extent.note(NT_GNU_BUILD_ID, kGnuNoteName)) {
                v.build_id_size = id->size();
                v.build_id = room.text.put(id->data(), id->size());
            }
        }
        room.steps.push({nullptr, room.objects.items().size()});
        room.objects.push(v);
        return true;
    });
    Scan s;
    s.counters = room.counters;
    s.words = room.words;
    s.steps = std::span<const Step>(room.steps.items());
    const auto& segments = room.segments.items();
    for (const Visited& v : room.objects.items()) {
        Fresh f{{v.addr, v.phdr}, room.text.at(v.name), {}, std::nullopt};
        for (std::size_t k = v.first_segment; k < v.first_segment + v.segments; ++k)
            f.segments.emplace_back(segments[k].lo, segments[k].hi);
        if (v.facts != host::ScratchText::npos) f.facts = decode_loaded_facts(room.text.bytes(v.facts, v.facts_size));
        if (v.build_id != host::ScratchText::npos) {
            auto id = room.text.bytes(v.build_id, v.build_id_size);
            f.build_id.assign(reinterpret_cast<const char*>(id.data()), id.size());
        }
        s.fresh.push_back(std::move(f));
    }
    return s;
}

// Bring the model in line with the loaded objects: forget what went, adopt
// what came, and patch the address ranges -- work in proportion to what
// changed, plus one walk that matches each survivor without copying it.
void LiveProcess::sync_locked() {
    if (unchanged_locked() || opened_went_alone_locked()) return;
    Scan s = scan_locked();
    adds_ = s.counters.adds;
    subs_ = s.counters.subs;
    dirty_ = false;
    // The fast path's words are checked against every walk; one contradiction
    // turns it off for good.
    if (words_ && !s.words_match()) words_bad_ = true;
    words_ok_.store(words_ && !words_bad_, std::memory_order_release);
    synced_ = {s.words.adds, s.words.nloaded};
    apply_scan(s);
}

void LiveProcess::apply_scan(Scan& s) {
    if (same_as_last_walk(s)) {
        // Only objects that no walk showed can have gone (a plugin loaded
        // and unloaded again): what the engine added is forgotten.
        forget_pending_locked();
    } else {
        apply_changes(s);
        std::vector<int> remap;
        if (engine_->compact(&remap)) renumber(remap);
    }
}

void LiveProcess::forget_pending_locked() {
    for (int i : pending_) engine_->forget(i);
    pending_.clear();
    std::vector<int> remap;
    if (engine_->compact(&remap)) renumber(remap);
}

// A plugin loaded through ldshim and closed again is the common change
// between two calls, and a walk to find it out costs in proportion to
// everything loaded.  It is told exactly without one: since the dlopen that
// added it (note_opened) the loader added nothing and removed one object,
// and the loader no longer lists the plugin's address -- so that one object
// was the plugin, and the model without it is the process.  Anything else
// is left to the walk.
bool LiveProcess::opened_went_alone_locked() {
    if (!opened_) return false;
    const Opened o = *opened_;
    opened_.reset();
    Generation now;
    if (!words_ok_.load(std::memory_order_relaxed) || !read_generation(words_, now)) return false;
    if (now.adds != o.after.adds || now.nloaded + 1 != o.after.nloaded) return false;
    if (pending_.size() != 1 || pending_[0] != o.object || host::find_object(o.dynamic)) return false;
    forget_pending_locked();
    synced_ = now;
    dirty_ = false;
    return true;
}

bool LiveProcess::same_as_last_walk(const Scan& s) const {
    if (!s.fresh.empty() || s.steps.size() != order_.size()) return false;
    for (std::size_t i = 0; i < order_.size(); ++i)
        if (s.steps[i].known != order_[i].known) return false;
    return true;
}

void LiveProcess::apply_changes(Scan& s) {
    const unsigned long long walk = ++walks_;
    for (const Step& st : s.steps)
        if (st.known) static_cast<Known*>(st.known)->seen = walk;
    for (const Expected& e : order_) {
        if (e.known->seen == walk) continue;
        drop_known(*e.known);
        known_.erase(e.key);
    }
    // What the engine added itself is matched by name (l_name), as glibc
    // would have named it; what no walk shows was never loaded or went again.
    std::unordered_map<std::string, int> pending;
    for (int i : pending_) pending.emplace(engine_->objects()[static_cast<std::size_t>(i)].name, i);
    pending_.clear();
    order_.clear();
    order_names_.clear();
    for (const Step& st : s.steps) {
        Known* k = st.known ? static_cast<Known*>(st.known) : add_known(s.fresh[st.visited], pending);
        if (!k) continue;
        k->pos = order_.size();
        order_.push_back({k->key, k, order_names_.size()});
        order_names_.append(k->name.c_str(), k->name.size() + 1);
    }
    for (const auto& [name, i] : pending) engine_->forget(i);
}

// A walked object the model did not know by place: the one the engine
// added under that name, else adopted.  nullptr only if two objects of one
// walk shared a place, which mapped objects cannot.
LiveProcess::Known* LiveProcess::add_known(Fresh& f, std::unordered_map<std::string, int>& pending) {
    auto [it, added] = known_.try_emplace(f.key);
    if (!added) return nullptr;
    Known& k = it->second;
    k.key = f.key;
    k.name = f.name;
    k.object = engine_->main_object();  // an unnamed object is the main program, as dladdr reports
    if (!f.name.empty()) {
        if (auto p = pending.find(f.name); p != pending.end()) {
            k.object = p->second;
            pending.erase(p);
        } else {
            k.object = adopt_fresh(f);
        }
    }
    for (const auto& [lo, hi] : f.segments) {
        ranges_.insert_or_assign(lo, Range{hi, k.object});
        k.segments.push_back(lo);
    }
    return &k;
}

// Objects that appeared without ldshim: no loader, as glibc records for
// anything dlopen'ed.
int LiveProcess::adopt_fresh(Fresh& f) {
    Object o;
    o.kind = Object::Kind::library;
    o.name = f.name;
    o.names = {f.name};
    if (f.facts && f.facts->ok) o.facts = std::move(f.facts->facts);
    o.id = host::file_identity_of(f.name, f.segments.empty() ? 0 : f.segments[0].first, f.build_id, nullptr);
    o.dlopened = true;
    o.loader = -1;
    return engine_->adopt(std::move(o));
}

// What the process's start-up loaded, as its loader holds it: every object
// of namespace 0 but the main program, ld.so and the vDSO, in load order,
// with its facts read from memory and the identity of the file mapped.
// Objects dlopen'ed since come last; the emulated start-up does not take
// them.  nullopt where an object's facts cannot be read from memory: the
// start-up is then emulated from the files.
std::optional<ProcessStart> LiveProcess::process_start() {
    Scan s = scan_locked();
    const host::MappedFiles maps = host::MappedFiles::of_this_process();
    const host::MappedFiles* trusted = host::maps_name_files_as_stat(maps) ? &maps : nullptr;
    const std::uintptr_t rtld = getauxval(AT_BASE), vdso = getauxval(AT_SYSINFO_EHDR);
    auto holds = [](const Fresh& f, std::uintptr_t addr) {
        return addr && std::any_of(f.segments.begin(), f.segments.end(),
                                   [&](const auto& seg) { return seg.first <= addr && addr < seg.second; });
    };
    ProcessStart p;
    for (Fresh& f : s.fresh) {
        if (f.name.empty() || holds(f, rtld) || holds(f, vdso)) continue;
        if (!f.facts || !f.facts->ok) return std::nullopt;
        const std::uintptr_t at = f.segments.empty() ? 0 : f.segments[0].first;
        p.loaded.push_back(
            {f.name, std::move(f.facts->facts), host::file_identity_of(f.name, at, f.build_id, trusted)});
        if (p.cwd.empty() && trusted && f.name[0] != '/')
            if (const auto* file = trusted->at(at)) p.cwd = host::directory_it_was_named_from(f.name, *file);
    }
    return p;
}

// An object that went: out of the model and out of the address ranges.
void LiveProcess::drop_known(const Known& k) {
    for (std::uintptr_t lo : k.segments)
        if (auto it = ranges_.find(lo); it != ranges_.end() && it->second.object == k.object) ranges_.erase(it);
    if (k.object != engine_->main_object()) engine_->forget(k.object);
}

void LiveProcess::renumber(const std::vector<int>& remap) {
    auto fix = [&](int i) { return i < 0 ? -1 : remap[static_cast<std::size_t>(i)]; };
    for (auto& [key, k] : known_) k.object = fix(k.object);
    for (auto& [lo, r] : ranges_) r.object = fix(r.object);
    for (int& p : pending_) p = fix(p);
    std::erase(pending_, -1);
}

// The model object whose mapped segments contain addr; the main program when
// none does (as glibc treats a return address in JIT code).
int LiveProcess::object_at(std::uintptr_t addr) {
    auto it = ranges_.upper_bound(addr);
    if (it != ranges_.begin() && addr < std::prev(it)->second.hi) return std::prev(it)->second.object;
    return engine_->main_object();
}

// The engine's objects from index `from` on that are live in namespace 0:
// the next walk matches them by name (or forgets them).
void LiveProcess::note_added(std::size_t from) {
    const auto& objs = engine_->objects();
    for (std::size_t i = from; i < objs.size(); ++i)
        if (!objs[i].removed && objs[i].ns == 0 && objs[i].kind != Object::Kind::main)
            pending_.push_back(static_cast<int>(i));
}

void LiveProcess::note_opened(const void* map) {
    std::lock_guard<std::mutex> lock(mu_);
    dirty_ = true;
    opened_.reset();
    // (Where telling the unload would cost a walk itself, the walk does it.)
    if (!map || pending_.size() != 1 || !engine_ || !words_ok_.load(std::memory_order_relaxed) ||
        !host::find_object_is_lock_free())
        return;
    // Exactly one object added to namespace 0 since the model was reconciled,
    // and it is the one the model expected: glibc names it by the path
    // ldshim handed it.
    Generation after;
    if (!read_generation(words_, after) || after.adds != synced_.adds + 1 || after.nloaded != synced_.nloaded + 1)
        return;
    const auto* lm = static_cast<const link_map*>(map);
    const Object& expected = engine_->objects()[static_cast<std::size_t>(pending_[0])];
    if (!lm->l_name || expected.name != lm->l_name || !lm->l_ld) return;
    auto where = host::find_object(lm->l_ld);
    if (!where || where->link_map != map) return;
    opened_ = Opened{pending_[0], lm->l_ld, after};
}

Resolution LiveProcess::resolve(const void* caller, const char* file, bool noload, bool details, bool new_namespace) {
    Resolution r;
    std::lock_guard<std::mutex> lock(mu_);
    if (!engine_) {
        r.kind = Resolution::Kind::unresolved;
        r.error = init_error_;
        return r;
    }
    sync_locked();
    DlopenRequest req;
    req.caller = object_at(reinterpret_cast<std::uintptr_t>(caller));
    if (details) {
        const Object& c = engine_->objects()[static_cast<std::size_t>(req.caller)];
        r.caller = c.kind == Object::Kind::main ? "main program" : c.name;
    }
    if (file) req.name = std::string(file);
    req.noload = noload;
    if (new_namespace) req.ns_mode = DlopenRequest::Ns::new_ns;
    const std::size_t before = engine_->objects().size();
    const bool named_before = file && !engine_->objects_named(*req.name).empty();
    cache_.begin_call();
    const std::uint64_t lookups = engine_->cache_lookups();
    const std::uint64_t changes = engine_->record_changes();
    MapOutcome m = engine_->dlopen(req);
    const bool cache_failed = cache_.note_use(engine_->cache_lookups() - lookups);
    r.record_changed = cache_failed || engine_->record_changes() != changes;
    note_added(before);
    if (new_namespace) {
        Resolution out;
        if (m.error) {
            out.kind = Resolution::Kind::not_found;
            out.error = m.error->text();
        } else if (m.object >= 0) {
            out.kind = Resolution::Kind::found;
            out.path = engine_->objects()[static_cast<std::size_t>(m.object)].name;
        }
        // Drop the namespace from the model: the real one is invisible here.
        const auto& objs = engine_->objects();
        for (std::size_t i = 0; i < objs.size(); ++i)
            if (objs[i].ns != 0) engine_->forget(static_cast<int>(i));
        return out;
    }
    // The model may now hold objects that are not loaded (yet): re-check it
    // against the process next time.
    if (m.is_new) dirty_ = true;
    if (m.error) {
        r.kind = Resolution::Kind::not_found;
        r.error = m.error->text();
        return r;
    }
    if (m.object < 0) {  // RTLD_NOLOAD miss: NULL without an error
        r.kind = Resolution::Kind::not_found;
        return r;
    }
    const Object& o = engine_->objects()[static_cast<std::size_t>(m.object)];
    r.kind = m.is_new ? Resolution::Kind::found : Resolution::Kind::loaded;
    r.path = o.kind == Object::Kind::main ? std::string() : o.name;
    if (!r.path.empty())
        for (int i : engine_->objects_named(r.path))
            if (i != m.object) r.path_names_another = true;
    r.name_added = file && !named_before && *req.name != o.name && !(o.facts.soname && *o.facts.soname == *req.name);
    if (r.name_added && m.is_new)
        for (std::size_t i = before; i < engine_->objects().size() && !r.name_needed_by_load; ++i) {
            const auto& needed = engine_->objects()[i].facts.needed;
            r.name_needed_by_load = std::find(needed.begin(), needed.end(), *req.name) != needed.end();
        }
    if (!m.is_new && !dirty_ && file && by_name_alone(*req.name, o)) remember_loaded(*req.name, o);
    if (details) r.rule = m.is_new ? source_text(o.found_by) : "already loaded";
    return r;
}

}  // namespace ldshim::resolver
