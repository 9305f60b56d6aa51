#include "resolver/live_process.h"
#include "resolver/live_process_walk.h"

#include "host/dir_record.h"
#include "host/libc.h"
#include "host/loader_in_process.h"
#include "host/mapped_files.h"
#include "host/settings.h"
#include "host/start_capture.h"
#include "host/startup_env.h"

#include <link.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <thread>

namespace ldshim::resolver {

using namespace ldshim::loader;  // NOLINT(google-build-using-namespace): the model is the engine's
namespace {

// The instance once built (lib/fork_handlers.cc locks only what exists).
std::atomic<LiveProcess*> g_existing{nullptr};
std::atomic<int> g_building{0};  // 1 once a thread has begun building it
// How long a call waits for another thread to finish building the model.
constexpr int kBuildWaitMs = 2000;

}  // namespace

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

LiveProcess::~LiveProcess() = default;

LiveProcess::LiveProcess() : room_(std::make_unique<ScanRoom>()) {
    // No other thread sees the model before it is built; the lock is held so
    // that what the _locked functions assume holds here too.
    std::lock_guard<std::mutex> lock(mu_);
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
    if (!step_.words_ok.load(std::memory_order_acquire) || !read_generation(words_, now)) return false;
    return FastAnswers::lookup(file, now, handed);
}

// Under mu_, after sync_locked(): `name` is the loaded object `o` at step_.synced.
void LiveProcess::remember_loaded(const std::string& name, const Object& o) {
    if (step_.words_ok.load(std::memory_order_relaxed)) fast_.remember(name, o, step_.synced);
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
    if (m.is_new) step_.dirty = true;
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
    r.name_added = file && !named_before && !o.answers_to(*req.name, false);
    if (r.name_added && m.is_new)
        for (std::size_t i = before; i < engine_->objects().size() && !r.name_needed_by_load; ++i) {
            const auto& needed = engine_->objects()[i].facts.needed;
            r.name_needed_by_load = std::find(needed.begin(), needed.end(), *req.name) != needed.end();
        }
    if (!m.is_new && !step_.dirty && file && by_name_alone(*req.name, o)) remember_loaded(*req.name, o);
    if (details) r.rule = m.is_new ? source_text(o.found_by) : "already loaded";
    return r;
}

}  // namespace ldshim::resolver
