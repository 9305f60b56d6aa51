// Keeping the live model in step with the loaded objects (LiveProcess's
// synchronisation, under its lock): one walk matches every known object in
// place and copies only the new ones; an object ldshim's own dlopen added
// and that alone went since is told without a walk.  All the state it
// decides by is LiveProcess::InStep.
#include "host/find_object.h"
#include "host/libc.h"
#include "host/start_capture.h"
#include "loader/loaded_extent.h"
#include "resolver/live_process.h"
#include "resolver/live_process_walk.h"

#include <link.h>

#include <algorithm>
#include <cstring>
#include <unordered_map>

namespace ldshim::resolver {

using namespace ldshim::loader;  // NOLINT(google-build-using-namespace): the model is the engine's

// Whether the loader added or removed nothing since the model was last
// reconciled (and the model itself added nothing since).
bool LiveProcess::unchanged_locked() {
    if (step_.dirty) return false;
    Generation now;
    if (step_.words_ok.load(std::memory_order_relaxed) && read_generation(words_, now)) return now == step_.synced;
    return host::load_counters() == step_.counters;
}

// The known object at this place with this name, if any: first where the
// last walk's order expects it (host::InOrderMatch), else by its key.  Runs
// inside the walk: no allocation, no call that may be wrapped.
LiveProcess::Known* LiveProcess::match(const dl_phdr_info& info, host::InOrderMatch& in_order) noexcept {
    const Key key{info.dlpi_addr, info.dlpi_phdr};
    const char* name = host::name_of(info);
    const std::size_t i = in_order(
        order_.size(),
        [&](std::size_t j) {
            return order_[j].key == key && std::strcmp(order_names_.data() + order_[j].name_at, name) == 0;
        },
        [&] {
            // Every known object is in order_, at its pos (apply_changes).
            auto it = known_.find(key);
            return it != known_.end() && std::strcmp(it->second.name.c_str(), name) == 0 ? it->second.pos
                                                                                         : host::InOrderMatch::npos;
        });
    return i == host::InOrderMatch::npos ? nullptr : order_[i].known;
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
        if (Known* k = match(info, room.in_order)) {
            room.steps.push({k, 0});
            return true;
        }
        const char* name = host::name_of(info);
        Visited v{info.dlpi_addr,
                  info.dlpi_phdr,
                  room.text.put_string(name),
                  room.segments.items().size(),
                  0,
                  host::ScratchText::npos,
                  0,
                  host::ScratchText::npos,
                  0};
        host::for_each_segment(info, [&](const Segment& g) {
            if (room.segments.push(g)) ++v.segments;
        });
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
    step_.counters = s.counters;
    step_.dirty = false;
    // The fast path's words are checked against every walk; one contradiction
    // turns it off for good.
    if (words_ && !s.words_match()) step_.words_bad = true;
    step_.words_ok.store(words_ && !step_.words_bad, std::memory_order_release);
    step_.synced = {s.words.adds, s.words.nloaded};
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
    if (!step_.opened) return false;
    const Opened o = *step_.opened;
    step_.opened.reset();
    Generation now;
    if (!step_.words_ok.load(std::memory_order_relaxed) || !read_generation(words_, now)) return false;
    if (now.adds != o.after.adds || now.nloaded + 1 != o.after.nloaded) return false;
    if (pending_.size() != 1 || pending_[0] != o.object || host::find_object(o.dynamic)) return false;
    forget_pending_locked();
    step_.synced = now;
    step_.dirty = false;
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
    step_.dirty = true;
    step_.opened.reset();
    // (Where telling the unload would cost a walk itself, the walk does it.)
    if (!map || pending_.size() != 1 || !engine_ || !step_.words_ok.load(std::memory_order_relaxed) ||
        !host::find_object_is_lock_free())
        return;
    // Exactly one object added to namespace 0 since the model was reconciled,
    // and it is the one the model expected: glibc names it by the path
    // ldshim handed it.
    Generation after;
    if (!read_generation(words_, after) || after.adds != step_.synced.adds + 1 ||
        after.nloaded != step_.synced.nloaded + 1)
        return;
    const auto* lm = static_cast<const link_map*>(map);
    const Object& expected = engine_->objects()[static_cast<std::size_t>(pending_[0])];
    if (!lm->l_name || expected.name != lm->l_name || !lm->l_ld) return;
    auto where = host::find_object(lm->l_ld);
    if (!where || where->link_map != map) return;
    step_.opened = Opened{pending_[0], lm->l_ld, after};
}

}  // namespace ldshim::resolver
