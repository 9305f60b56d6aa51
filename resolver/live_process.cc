#include "resolver/live_process.h"

#include "host/libc.h"
#include "host/loaded_objects.h"
#include "host/loader_in_process.h"
#include "host/settings.h"

#include <pthread.h>

#include <link.h>
#include <sys/auxv.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <unordered_map>
#include <unordered_set>

namespace ldshim::resolver {

using namespace ldshim::loader;  // NOLINT(google-build-using-namespace): the model is the engine's
namespace {

struct LiveObject {
    std::string name;
    std::vector<std::pair<std::uintptr_t, std::uintptr_t>> segments;  // PT_LOAD, [lo, hi)
    std::optional<FactsResult> facts;                                 // read for objects the model does not know
};

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

struct Scan {
    std::vector<LiveObject> objects;
    host::LoadCounters counters;
    WordsSeen words;
    // The words agree with the walk: adds, the walk's length, subs (adds
    // minus nloaded when namespace 0 is the only one), and the lock held.
    bool words_match() const {
        return words.read && words.adds == counters.adds && words.nloaded == objects.size() && words.write_lock != 0 &&
               (words.nns != 1 || counters.adds - words.nloaded == counters.subs);
    }
};

// What one walk copies per object, under the loader's lock
// (resolver/loaded_objects.h): its name, its PT_LOAD segments, and for an
// object the model does not know, the raw facts (copy_loaded_facts).
struct Visited {
    std::size_t name;  // offset in the text
    std::size_t first_segment, segments;
    std::size_t facts, facts_size;  // in the text; npos: not copied
};
struct Segment {
    std::uintptr_t lo, hi;
};
struct ScanRoom {
    host::Scratch<Visited> objects;
    host::Scratch<Segment> segments;
    host::ScratchText text;
    host::LoadCounters counters;
    WordsSeen words;

    void reset(std::size_t n) {
        objects.reset(n);
        segments.reset(4 * n);
        text.reset(256 * n);
    }
    bool overflowed() const { return objects.overflowed() || segments.overflowed() || text.overflowed(); }
};

// One walk of dl_iterate_phdr (namespace 0, the one the model covers).
// Everything that reads an object's memory happens inside it, where the
// loader's lock keeps another thread's dlclose from unmapping the object;
// `known` (sorted) are the names whose facts the model has.
Scan scan(const std::vector<std::string>& known, const host::LoaderWords& words, std::size_t& room_size) {
    ScanRoom room;
    host::walk_with_room(room, room_size, [&](const dl_phdr_info& info, const host::LoadCounters& now) {
        room.counters = now;
        if (words && room.objects.items().empty() && !room.objects.overflowed())
            room.words = {*words.adds, *words.nloaded, *words.write_lock, *words.nns, true};
        const char* name = info.dlpi_name ? info.dlpi_name : "";
        Visited v{room.text.put_string(name), room.segments.items().size(), 0, host::ScratchText::npos, 0};
        for (std::size_t i = 0; i < info.dlpi_phnum; ++i) {
            const ElfW(Phdr)& ph = info.dlpi_phdr[i];
            if (ph.p_type == PT_LOAD &&
                room.segments.push({info.dlpi_addr + ph.p_vaddr, info.dlpi_addr + ph.p_vaddr + ph.p_memsz}))
                ++v.segments;
        }
        if (*name && !std::binary_search(known.begin(), known.end(), std::string_view(name), std::less<>())) {
            v.facts_size = copy_loaded_facts(info.dlpi_addr, info.dlpi_phdr, info.dlpi_phnum, room.text.tail());
            v.facts = room.text.commit(v.facts_size);
        }
        room.objects.push(v);
        return true;
    });
    Scan s;
    s.counters = room.counters;
    s.words = room.words;
    const auto& segments = room.segments.items();
    for (const Visited& v : room.objects.items()) {
        LiveObject lo;
        lo.name = room.text.at(v.name);
        for (std::size_t k = v.first_segment; k < v.first_segment + v.segments; ++k)
            lo.segments.emplace_back(segments[k].lo, segments[k].hi);
        if (v.facts != host::ScratchText::npos) lo.facts = decode_loaded_facts(room.text.bytes(v.facts, v.facts_size));
        s.objects.push_back(std::move(lo));
    }
    return s;
}

std::string argv0() {
    std::ifstream in("/proc/self/cmdline", std::ios::binary);
    std::string a;
    std::getline(in, a, '\0');
    return a;
}

// The instance once built (lib/fork_handlers.cc locks only what exists).
std::atomic<LiveProcess*> g_existing{nullptr};

// The already-loaded answers, by name: written only under the model's lock,
// read by any thread without one (a sequence lock per slot: odd while being
// written; a reader that saw it change simply asks the model).  The texts
// are interned and never freed, so a reader may compare them even while the
// slot is being rewritten.
struct FastSlot {
    std::atomic<unsigned> seq{0};
    std::atomic<const char*> name{nullptr};
    std::atomic<const char*> path{nullptr};  // nullptr: the main program
    std::atomic<unsigned long long> adds{0};
    std::atomic<unsigned int> nloaded{0};
};
constexpr std::size_t kFastSlots = 256;
FastSlot g_fast[kFastSlots];
constexpr std::size_t kMaxInterned = 4096;  // beyond this, no new fast answers

std::size_t slot_of(const char* name) noexcept {
    std::size_t h = 14695981039346656037ull;  // FNV-1a
    for (; *name; ++name) h = (h ^ static_cast<unsigned char>(*name)) * 1099511628211ull;
    return h % kFastSlots;
}

// Whether glibc answers `name` from its list of loaded objects alone: one
// of the object's names (l_name, l_libname, its SONAME) is exactly `name`,
// and `name` has no dynamic string token, so neither the caller nor the
// filesystem can change the answer while nothing is loaded or unloaded.
bool by_name_alone(const std::string& name, const Object& o) {
    if (name.empty() || name.find('$') != std::string::npos) return false;
    if (o.name == name || (o.facts.soname && *o.facts.soname == name)) return true;
    return std::find(o.names.begin(), o.names.end(), name) != o.names.end();
}

}  // namespace

LiveProcess& LiveProcess::instance() {
    // Never destroyed: dlopen may be called from other threads during exit.
    // Only reached through resolver/c_api.cc's guard, so a dlopen made while
    // the model is being built passes through instead of recursing here.
    alignas(LiveProcess) static unsigned char storage[sizeof(LiveProcess)];
    static LiveProcess* p = [] {
        auto* lp = new (storage) LiveProcess();
        g_existing.store(lp, std::memory_order_release);
        return lp;
    }();
    return *p;
}

LiveProcess* LiveProcess::existing() { return g_existing.load(std::memory_order_acquire); }

LiveProcess::LiveProcess() {
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
    std::string err;
    auto cfg = host::derive_in_process(&err);
    if (!cfg) {
        init_error_ = "ldshim cannot model this process's loader (" + err + "); dlopen is left to glibc";
        return;
    }
    const bool secure = getauxval(AT_SECURE) != 0;
    cache_ = LdCache::load(fs_, cfg->cache_path);
    EngineOptions o;
    o.argv0 = argv0();
    o.secure = secure;
    if (const char* v = std::getenv("LD_LIBRARY_PATH")) o.library_path = std::string(v);
    if (const char* v = std::getenv("LD_PRELOAD")) o.preload = v;
    if (const char* v = std::getenv("LD_ORIGIN_PATH")) o.origin_path = std::string(v);
    o.keep_going = true;  // a library the emulation cannot find is simply not in the model
    engine_ = std::make_unique<Engine>(std::move(*cfg), fs_, cache_, nullptr, o);
    engine_->start(exe);
    engine_->set_keep_going(false);
    words_ = host::loader_words();
}

// The loader's generation from its own words, or false when it cannot be read
// consistently now.  Why these words: glibc bumps GL(dl_load_adds) for every
// object it adds (to any namespace) and changes _ns_nloaded for every object
// it adds to or removes from namespace 0, both under its write lock -- an
// exact count of what dl_iterate_phdr's dlpi_adds/dlpi_subs report, readable
// in a few loads.  The alternatives are not exact: _r_debug's r_state is not
// a counter (a load and an unload between two calls leave it as it was), and
// the r_map chain's head never changes while its length or tail cannot be
// read without the lock (a dlclose may free a link_map mid-walk) and repeat
// after an unload followed by a load at the same address.
// Reading adds twice around nloaded and the lock word, and accepting only an
// unheld lock with adds unchanged, rules out a pair torn by a change in
// progress (glibc writes both inside one hold of that lock).
bool LiveProcess::read_generation(Generation& g) const noexcept {
    for (int attempt = 0; attempt < 4; ++attempt) {
        unsigned long long a1 = __atomic_load_n(words_.adds, __ATOMIC_ACQUIRE);
        unsigned int n = __atomic_load_n(words_.nloaded, __ATOMIC_ACQUIRE);
        int lock = __atomic_load_n(words_.write_lock, __ATOMIC_ACQUIRE);
        unsigned long long a2 = __atomic_load_n(words_.adds, __ATOMIC_ACQUIRE);
        if (lock == 0 && a1 == a2) {
            g = {a1, n};
            return true;
        }
        __builtin_ia32_pause();
    }
    return false;
}

bool LiveProcess::loaded_fast(const char* file, const char*& path) const noexcept {
    if (!words_ok_.load(std::memory_order_acquire)) return false;
    Generation now;
    if (!read_generation(now)) return false;
    const FastSlot& s = g_fast[slot_of(file)];
    unsigned seq = s.seq.load(std::memory_order_acquire);
    if (seq & 1u) return false;
    // Acquire loads (no fences, which ThreadSanitizer cannot follow): a field
    // from a newer write synchronises with its release store, so the
    // sequence read after it has moved; on x86 these are plain loads.
    const char* name = s.name.load(std::memory_order_acquire);
    const char* p = s.path.load(std::memory_order_acquire);
    Generation at{s.adds.load(std::memory_order_acquire), s.nloaded.load(std::memory_order_acquire)};
    if (s.seq.load(std::memory_order_relaxed) != seq) return false;
    if (!name || !(at == now) || std::strcmp(name, file) != 0) return false;
    path = p;
    return true;
}

const char* LiveProcess::intern(const std::string& s) {
    auto it = interned_.find(s);
    if (it != interned_.end()) return it->c_str();
    if (interned_.size() >= kMaxInterned) return nullptr;
    return interned_.insert(s).first->c_str();
}

// Under mu_, after sync_locked(): `name` is the loaded object `o` at synced_.
void LiveProcess::remember_loaded(const std::string& name, const Object& o) {
    if (!words_ok_.load(std::memory_order_relaxed)) return;
    const bool main = o.kind == Object::Kind::main;
    const char* path = main ? nullptr : intern(o.name);
    const char* n = intern(name);
    if (!n || (!main && !path)) return;
    FastSlot& s = g_fast[slot_of(n)];
    unsigned seq = s.seq.load(std::memory_order_relaxed);
    s.seq.store(seq + 1, std::memory_order_relaxed);  // ordered before the fields by their release
    s.name.store(n, std::memory_order_release);
    s.path.store(path, std::memory_order_release);
    s.adds.store(synced_.adds, std::memory_order_release);
    s.nloaded.store(synced_.nloaded, std::memory_order_release);
    s.seq.store(seq + 2, std::memory_order_release);
}

// Bring the model in line with the loaded objects.
void LiveProcess::sync_locked() {
    if (!dirty_) {
        Generation now;
        if (words_ok_.load(std::memory_order_relaxed) && read_generation(now)) {
            if (now == synced_) return;
        } else {
            auto [adds, subs] = host::load_counters();
            if (adds == adds_ && subs == subs_) return;
        }
    }
    std::vector<std::string> known;
    for (const auto& o : engine_->objects())
        if (!o.removed && o.ns == 0) known.push_back(o.name);
    std::sort(known.begin(), known.end());
    Scan s = scan(known, words_, scan_room_);
    adds_ = s.counters.adds;
    subs_ = s.counters.subs;
    dirty_ = false;
    // The fast path's words are checked against every walk; one contradiction
    // turns it off for good.
    if (words_ && !s.words_match()) words_bad_ = true;
    words_ok_.store(words_ && !words_bad_, std::memory_order_release);
    synced_ = {s.words.adds, s.words.nloaded};
    std::unordered_set<std::string> live;
    for (const auto& lo : s.objects)
        if (!lo.name.empty()) live.insert(lo.name);
    const auto& objs = engine_->objects();
    std::unordered_set<std::string> modelled;
    for (std::size_t i = 0; i < objs.size(); ++i) {
        const Object& o = objs[i];
        if (o.removed || o.ns != 0 || o.kind == Object::Kind::main) continue;
        if (!live.count(o.name)) {
            engine_->forget(static_cast<int>(i));
            continue;
        }
        modelled.insert(o.name);
    }
    engine_->compact();
    for (const auto& lo : s.objects) {
        if (lo.name.empty() || modelled.count(lo.name)) continue;
        Object o;
        o.kind = Object::Kind::library;
        o.name = lo.name;
        o.names = {lo.name};
        if (lo.facts && lo.facts->ok) o.facts = lo.facts->facts;
        struct stat st {};
        if (::stat(lo.name.c_str(), &st) == 0)
            o.id = {static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
        o.dlopened = true;
        o.loader = -1;
        engine_->adopt(std::move(o));
    }
    // Address ranges of every live object, for finding the caller.
    std::unordered_map<std::string, int> index;
    for (std::size_t i = 0; i < objs.size(); ++i)
        if (!objs[i].removed && objs[i].ns == 0 && objs[i].kind != Object::Kind::main)
            index.emplace(objs[i].name, static_cast<int>(i));
    ranges_.clear();
    for (const auto& lo : s.objects) {
        int idx = 0;  // the main program
        if (!lo.name.empty()) {
            auto it = index.find(lo.name);
            if (it == index.end()) continue;
            idx = it->second;
        }
        for (const auto& [a, b] : lo.segments) ranges_.push_back({a, b, idx});
    }
    std::sort(ranges_.begin(), ranges_.end(), [](const Range& a, const Range& b) { return a.lo < b.lo; });
}

// The model object whose mapped segments contain addr; the main program when
// none does (as glibc treats a return address in JIT code).
int LiveProcess::object_at(std::uintptr_t addr) {
    auto it = std::upper_bound(ranges_.begin(), ranges_.end(), addr,
                               [](std::uintptr_t a, const Range& r) { return a < r.lo; });
    if (it != ranges_.begin() && addr < std::prev(it)->hi) return std::prev(it)->object;
    return 0;  // the main program is object 0
}

void LiveProcess::note_changed() {
    std::lock_guard<std::mutex> lock(mu_);
    dirty_ = true;
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
    MapOutcome m = engine_->dlopen(req);
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
    if (!m.is_new && !dirty_ && file && by_name_alone(*req.name, o)) remember_loaded(*req.name, o);
    if (details) r.rule = m.is_new ? source_text(o.found_by) : "already loaded";
    return r;
}

}  // namespace ldshim::resolver
