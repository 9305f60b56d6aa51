#include "hooks/engine.h"

#include "hooks/events.h"
#include "hooks/object_scan.h"
#include "hooks/oplog.h"
#include "hooks/slot_writer.h"
#include "hooks/table.h"
#include "ldshim.h"
#include "memtype/epoch.h"
#include "resolver/settings.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>

namespace ldshim::hooks {

namespace {

// dl_iterate_phdr with a capturing callable.  The loader's write lock is held
// during the callback: nothing inside may call dladdr/dlsym/dlopen (lock
// order inversion with a concurrent dlopen), so the engine scans and writes
// inside and does every lookup between two iterations.
template <class F>
void each_object(F&& f) {
    std::function<int(dl_phdr_info&)> fn = std::forward<F>(f);
    resolver::libc_dl_iterate_phdr([](dl_phdr_info* info, std::size_t, void* p) { return (*static_cast<decltype(fn)*>(p))(*info); },
                    &fn);
}

// dl_iterate_phdr lists an object as soon as it is mapped, before its
// relocations are processed (another thread may be inside dlopen), and until
// it is unmapped (after its finalizers ran).  glibc registers an object for
// _dl_find_object only once it is relocated, and withdraws it first on
// dlclose, so that is the test for "its GOT holds real values".  Lock-free:
// safe inside the dl_iterate_phdr callback.
bool relocated(const dl_phdr_info& info) {
    for (std::size_t i = 0; i < info.dlpi_phnum; ++i) {
        if (info.dlpi_phdr[i].p_type != PT_LOAD) continue;
        auto* addr = reinterpret_cast<void*>(info.dlpi_addr + info.dlpi_phdr[i].p_vaddr);
        // Objects never overlap, so the one registered at this address is the
        // one being looked at.  (Only the copied range is read: the link_map
        // itself is the loader's to publish.)
        dl_find_object found;
        return _dl_find_object(addr, &found) == 0 && found.dlfo_map_start <= addr && addr < found.dlfo_map_end;
    }
    return false;
}

bool is_foreign(std::uintptr_t value, const char* symbol) {
    Dl_info info;
    if (!dladdr(reinterpret_cast<void*>(value), &info) || !info.dli_sname) return true;
    return reinterpret_cast<std::uintptr_t>(info.dli_saddr) != value || std::strcmp(info.dli_sname, symbol) != 0;
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
    Dl_info a, b;
    bool same_object = dladdr(f, &a) && dladdr(v, &b) && a.dli_fbase == b.dli_fbase;
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
    Dl_info info;
    if (dladdr(reinterpret_cast<void*>(&pin_self), &info) && info.dli_fname)
        resolver::libc_dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
}

// Writes a set of candidates, one protection change per page.  get(i) gives
// the candidate (slot, value expected there, and `write_value`), done(i, r)
// receives each result.
template <class Get, class Done>
void write_grouped(SlotWriter& writer, const std::vector<std::size_t>& which, Get&& get, Done&& done) {
    std::vector<std::pair<std::uintptr_t, std::size_t>> order;  // (slot, index)
    order.reserve(which.size());
    for (std::size_t i : which) order.emplace_back(get(i).slot, i);
    std::sort(order.begin(), order.end());
    std::vector<SlotWriter::Item> items;
    for (std::size_t a = 0; a < order.size();) {
        std::uintptr_t page = SlotWriter::page_of(order[a].first);
        std::size_t b = a;
        items.clear();
        bool plain = true;
        for (; b < order.size() && SlotWriter::page_of(order[b].first) == page; ++b) {
            const auto& c = get(order[b].second);
            items.push_back({c.slot, c.value, c.write_value, SlotWriter::Result::unmapped});
            plain = plain && c.plainly_writable;
        }
        writer.write_page(items.data(), items.size(), plain);
        for (std::size_t k = a; k < b; ++k) done(order[k].second, items[k - a].result);
        a = b;
    }
}

}  // namespace

Engine& Engine::instance() {
    static Engine* e = [] {
        auto* en = new Engine;  // never destroyed: hooks outlive static destructors
        // fork() while a pass runs must not leave the child with the pass's
        // locks held: taken in the pass's order, released on both sides.
        pthread_atfork(
            [] {
                instance().mu_.lock();
                OpLog::global().fork_prepare();
            },
            [] {
                OpLog::global().fork_release();
                instance().mu_.unlock();
            },
            [] {
                OpLog::global().fork_release();
                instance().mu_.unlock();
            });
        return en;
    }();
    return *e;
}

bool Engine::in_ldshim(std::uintptr_t addr) const {
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

void Engine::publish_loader_targets_locked() {
    auto table = std::make_unique<LoaderTable>();
    for (const auto& [slot, p] : patches_) {
        int k = loader_index(p.id);
        dl_find_object found;
        if (k < 0 || _dl_find_object(reinterpret_cast<void*>(slot), &found) != 0) continue;
        auto lo = reinterpret_cast<std::uintptr_t>(found.dlfo_map_start);
        auto it = std::find_if(table->rows.begin(), table->rows.end(), [&](const LoaderRow& r) { return r.lo == lo; });
        if (it == table->rows.end())
            it = table->rows.insert(table->rows.end(),
                                    {lo, reinterpret_cast<std::uintptr_t>(found.dlfo_map_end), {nullptr, nullptr}});
        it->next[k] = reinterpret_cast<void*>(p.target);
    }
    std::sort(table->rows.begin(), table->rows.end(), [](const LoaderRow& a, const LoaderRow& b) { return a.lo < b.lo; });
    const LoaderTable* old = g_loader_table.exchange(table.release(), std::memory_order_acq_rel);
    auto& epochs = memtype::EpochDomain::instance();
    if (old) g_retired.push_back({old, epochs.advance()});
    std::uint64_t oldest = epochs.oldest_reader();
    std::erase_if(g_retired, [&](const Retired& r) {
        if (r.epoch >= oldest) return false;
        delete r.table;
        return true;
    });
}

int Engine::install(unsigned flags) {
    if (flags == 0 || (flags & ~(LDSHIM_HOOK_CUDA | LDSHIM_HOOK_DLOPEN))) return LDSHIM_ERR_INVALID_ARGUMENT;
    if (!arch::kSupported || ((flags & LDSHIM_HOOK_CUDA) && !cuda_hooks_built())) return LDSHIM_ERR_UNSUPPORTED;
    if (resolver::settings().disabled) return LDSHIM_OK;  // LDSHIM_DISABLE: inert, as asked
    std::lock_guard lock(mu_);
    if (!installed_) pin_self();
    installed_ = true;
    // A set added later must reach objects already scanned for another one.
    if ((flags_ | flags) != flags_) seen_.clear();
    flags_ |= flags;
    g_recording.store(true, std::memory_order_release);
    try {
        pass_locked(true);
    } catch (const std::bad_alloc&) {
        return LDSHIM_ERR_NO_MEMORY;
    }
    return LDSHIM_OK;
}

int Engine::refresh() {
    std::lock_guard lock(mu_);
    if (!installed_) return LDSHIM_OK;
    resolver::LoadCounters c = resolver::load_counters();
    if (c.adds == adds_ && c.subs == subs_ && !retry_) return LDSHIM_OK;
    try {
        pass_locked(c.subs != subs_);
    } catch (const std::bad_alloc&) {
        return LDSHIM_ERR_NO_MEMORY;
    }
    return LDSHIM_OK;
}

bool Engine::reclaim_loader_slots(std::uintptr_t lo, std::uintptr_t hi) {
    std::unique_lock lock(mu_, std::try_to_lock);
    if (!lock.owns_lock() || !installed_) return false;  // a pass is running: it sees the slots
    bool any = false, theirs = false;
    // A slot is taken when it holds neither ldshim's entry nor a value in
    // its own object (a lazy slot not bound yet) nor one in ldshim.  Read
    // only while the object is still known (an unloaded one's record
    // survives until the next full pass).
    auto look = [&](std::uintptr_t slot, std::uintptr_t hook) {
        dl_find_object found;
        if (_dl_find_object(reinterpret_cast<void*>(slot), &found) != 0) return;
        auto v = __atomic_load_n(reinterpret_cast<std::uintptr_t*>(slot), __ATOMIC_ACQUIRE);
        auto own_lo = reinterpret_cast<std::uintptr_t>(found.dlfo_map_start);
        auto own_hi = reinterpret_cast<std::uintptr_t>(found.dlfo_map_end);
        if (v == hook || (v >= own_lo && v < own_hi) || in_ldshim(v)) return;
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

void Engine::pass_locked(bool full, bool patch) {
    if (full) {
        seen_.clear();
        watched_.clear();
    }
    retry_ = false;
    std::vector<Candidate> found;
    std::unordered_set<std::uintptr_t> confirmed;  // slots that still hold our hook
    ldshim_ranges_.clear();

    // 1. Scan (inside the loader lock: reads only).
    each_object([&](dl_phdr_info& info) {
        adds_ = info.dlpi_adds;
        subs_ = info.dlpi_subs;
        ObjectImports obj(info);
        if (obj.has_ldshim_marker()) {
            for (std::size_t i = 0; i < info.dlpi_phnum; ++i)
                if (info.dlpi_phdr[i].p_type == PT_LOAD) {
                    std::uintptr_t lo = info.dlpi_addr + info.dlpi_phdr[i].p_vaddr;
                    ldshim_ranges_.push_back({lo, lo + info.dlpi_phdr[i].p_memsz});
                }
            return 0;
        }
        if (!obj.ok() || seen_.count(info.dlpi_addr)) return 0;
        if (!relocated(info)) {
            retry_ = true;  // being loaded (or unloaded) by another thread: look again later
            return 0;
        }
        seen_.insert(info.dlpi_addr);
        auto wanted = [this](const char* name) {
            int id = find_hook(name);
            return id >= 0 && in_hook_set(id, flags_);
        };
        obj.for_each(wanted,
                     [&](const Import& imp) {
                         int id = find_hook(imp.name);
                         const HookDef& def = hook_def(id);
                         if (def.version && imp.version && std::strcmp(def.version, imp.version) != 0) return;
                         if (imp.kind == arch::SlotKind::abs64 && imp.addend != 0) return;
                         auto value = __atomic_load_n(reinterpret_cast<std::uintptr_t*>(imp.slot), __ATOMIC_ACQUIRE);
                         if (value == reinterpret_cast<std::uintptr_t>(def.fn)) {
                             confirmed.insert(imp.slot);
                             return;
                         }
                         if (value == 0) return;  // an unresolved weak reference: nothing to call
                         found.push_back({info.dlpi_addr, imp.slot, value, id, obj.contains(value),
                                          obj.plainly_writable(imp.slot), info.dlpi_name ? info.dlpi_name : "",
                                          imp.version ? imp.version : ""});
                     });
        return 0;
    });
    if (full)
        std::erase_if(patches_, [&](const auto& kv) { return !confirmed.count(kv.first); });
    if (!patch) {
        seen_.clear();
        return;
    }

    // 2. Decide what each hook calls (lookups: outside the loader lock).
    std::vector<Op> ops;
    std::vector<Candidate> todo;
    std::vector<bool> foreign;
    for (Candidate& c : found) {
        const HookDef& def = hook_def(c.id);
        std::atomic<void*>& next = g_next[c.id];
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
        void* expected = nullptr;
        void* v = reinterpret_cast<void*>(target);
        bool theirs = is_foreign(target, def.name);
        if (next.compare_exchange_strong(expected, v)) {
            adopt_companions(v, def.kind);
        } else if (expected != v && theirs && !is_foreign(reinterpret_cast<std::uintptr_t>(expected), def.name)) {
            // Another hooker took this function over: every hook call goes
            // through it, so it sees the calls it asked to see.
            next.store(v, std::memory_order_release);
        }
        foreign.push_back(theirs);
        c.write_value = reinterpret_cast<std::uintptr_t>(def.fn);
        c.target = target;
        todo.push_back(std::move(c));
    }

    // 3. Write (inside the loader lock again, so no object can go away
    // between the check that it is there and the store).
    std::unordered_map<std::uintptr_t, std::vector<std::size_t>> by_base;
    for (std::size_t i = 0; i < todo.size(); ++i) by_base[todo[i].base].push_back(i);
    std::vector<SlotWriter::Result> results(todo.size(), SlotWriter::Result::unmapped);
    if (!todo.empty()) {
        SlotWriter writer;
        each_object([&](dl_phdr_info& info) {
            auto it = by_base.find(info.dlpi_addr);
            if (it == by_base.end() || !relocated(info)) return 0;
            write_grouped(writer, it->second, [&](std::size_t i) -> const Candidate& { return todo[i]; },
                          [&](std::size_t i, SlotWriter::Result r) { results[i] = r; });
            return 0;
        });
    }
    unsigned paths = 0;
    for (std::size_t i = 0; i < todo.size(); ++i) {
        const Candidate& c = todo[i];
        const HookDef& def = hook_def(c.id);
        auto hook = reinterpret_cast<std::uintptr_t>(def.fn);
        Op op{c.object, def.name, c.version, c.slot, c.value, hook,
              reinterpret_cast<std::uintptr_t>(g_next[c.id].load()), OpStatus::patched, {}};
        if (results[i] == SlotWriter::Result::written) {
            op.status = foreign[i] ? OpStatus::chained : OpStatus::patched;
            if (c.lazy) op.detail = "lazy slot, not bound yet";
            patches_[c.slot] = {c.slot, c.value, hook, c.base, c.id, c.plainly_writable, c.object, c.target};
            paths |= path_of(c.id);
        } else {
            op.status = OpStatus::failed;
            op.new_value = c.value;
            op.detail = SlotWriter::describe(results[i]);
        }
        ops.push_back(std::move(op));
    }
    g_active_paths.fetch_or(paths, std::memory_order_relaxed);
    for (Op& op : ops) OpLog::global().append(std::move(op));
    if (full || !todo.empty()) publish_loader_targets_locked();
}

int Engine::uninstall() {
    std::lock_guard lock(mu_);
    if (!installed_) return LDSHIM_OK;
    g_recording.store(false, std::memory_order_release);
    try {
        pass_locked(true, false);  // drop the records of objects that went away
        std::vector<Op> ops;
        SlotWriter writer;
        std::unordered_map<std::uintptr_t, std::vector<const Patch*>> by_base;
        for (const auto& kv : patches_) by_base[kv.second.base].push_back(&kv.second);
        each_object([&](dl_phdr_info& info) {
            auto it = by_base.find(info.dlpi_addr);
            if (it == by_base.end() || !relocated(info)) return 0;
            std::vector<SlotWriter::Result> res(it->second.size());
            std::vector<std::size_t> idx(it->second.size());
            for (std::size_t k = 0; k < idx.size(); ++k) idx[k] = k;
            write_grouped(
                writer, idx,
                [&](std::size_t k) {
                    const Patch& p = *it->second[k];
                    return Candidate{p.base, p.slot, p.hook, p.id, false, p.plainly_writable, {}, {}, p.original};
                },
                [&](std::size_t k, SlotWriter::Result r) { res[k] = r; });
            for (std::size_t k = 0; k < idx.size(); ++k) {
                const Patch& p = *it->second[k];
                const HookDef& def = hook_def(p.id);
                Op op{p.object, def.name, {}, p.slot, p.hook, p.original, 0, OpStatus::restored, {}};
                if (res[k] == SlotWriter::Result::changed) {
                    op.status = OpStatus::left;
                    op.new_value = __atomic_load_n(reinterpret_cast<std::uintptr_t*>(p.slot), __ATOMIC_RELAXED);
                    op.old_value = op.new_value;
                    op.detail = "someone else rewrote the slot since; left as it is";
                } else if (res[k] != SlotWriter::Result::written) {
                    op.status = OpStatus::failed;
                    op.new_value = p.hook;
                    op.detail = SlotWriter::describe(res[k]);
                }
                ops.push_back(std::move(op));
            }
            return 0;
        });
        for (Op& op : ops) OpLog::global().append(std::move(op));
    } catch (const std::bad_alloc&) {
        return LDSHIM_ERR_NO_MEMORY;
    }
    patches_.clear();
    seen_.clear();
    watched_.clear();
    installed_ = false;
    flags_ = 0;
    g_active_paths.store(0, std::memory_order_relaxed);
    return LDSHIM_OK;
}

}  // namespace ldshim::hooks
