// The runtime resolver's C edge and its one dlopen core: every way into
// ldshim's dlopen -- ldshim_dlopen*, ldshim_dlmopen*, the front entries in
// the loader's import slots (front_entries.cc), and libldshim_preload.so --
// is one Request handed to dlopen_core, which asks the live model
// (live_process.cc) what glibc would do for the true caller and then opens
// the answer through `next`: what the caller's call would otherwise have
// reached (glibc, a sanitizer's interceptor, another tool's wrapper, ucm).
// The C functions differ only in what they make of its Verdict.
//
// A guest's rules, for every function here: before the constructor has read
// the settings, while this thread is already inside ldshim, and whenever the
// model cannot answer (no memory, an unreadable program), the call passes
// through to `next` unchanged.  No exception leaves, no function-local static
// is initialised on these paths, and no lock is held across `next`.
//
// Settings (host/settings.h), read once (ignored in secure mode):
//   LDSHIM_DISABLE=1  every call passes through; no hook is written
//   LDSHIM_DEBUG=1    one line per decision on stderr
#include "hooks/as_caller.h"
#include "hooks/patcher.h"
#include "host/libc.h"
#include "host/settings.h"
#include "ldshim.h"
#include "loader/paths.h"
#include "resolver/dlopen_entry.h"
#include "resolver/live_process.h"

#include <dlfcn.h>
#include <gnu/lib-names.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace ldshim::resolver {

namespace {

// This thread is inside the model (its construction may itself dlopen).
[[gnu::tls_model("initial-exec")]] thread_local bool t_inside = false;
// What this thread last handed to `next`: a wrapper that saved ldshim's
// front hook as its "original" calls back with exactly this (the same
// pointer, the same next) -- that call goes to glibc instead of round again.
[[gnu::tls_model("initial-exec")]] thread_local const char* t_forwarded_file = nullptr;
[[gnu::tls_model("initial-exec")]] thread_local void* t_forwarded_next = nullptr;

// The last failure of this thread, with glibc's text, until dlerror takes it.
thread_local std::string t_error;
thread_local std::string t_shown;
thread_local bool t_error_set = false;

// The one place this thread's failure is recorded: glibc's text for what
// failed, nothing for what succeeded (or failed with glibc's own text).
void keep_error(const std::string& e) noexcept {
    try {
        t_error = e;
        t_error_set = true;
    } catch (...) {
        t_error_set = false;  // no memory for the text: glibc's dlerror() speaks
    }
}
inline void set_error(const std::string& e) noexcept {
    if (e.empty())
        t_error_set = false;
    else
        keep_error(e);
}
const std::string kNoError;

// "via libasan.so.8": the object that `next` lives in, unless it is glibc's
// own (libc, or libdl before 2.34).
std::string interposer_of(const void* next) {
    Dl_info info;
    if (!next || !dladdr(next, &info) || !info.dli_fname) return {};
    const std::string_view base = loader::base_name(info.dli_fname);
    const bool glibc = base == LIBC_SO || base == LIBDL_SO;
    return glibc ? std::string() : std::string(base);
}

// The object `caller` lies in, for a log line the model could not name
// (it declined before it knew the objects).
std::string object_named_at(const void* caller) {
    Dl_info info;
    if (!caller || !dladdr(caller, &info) || !info.dli_fname || !*info.dli_fname) return "main program";
    return info.dli_fname;
}

void log_decision(const char* call, const char* file, const Resolution& r, const void* caller, const void* next) {
    const char* kind = r.kind == Resolution::Kind::loaded      ? "already loaded"
                       : r.kind == Resolution::Kind::found     ? "found"
                       : r.kind == Resolution::Kind::not_found ? "not found"
                                                               : "unresolved (passed on)";
    std::string via = interposer_of(next);
    const char* rule = std::strcmp(r.rule, kind) == 0 ? "" : r.rule;
    std::string who = r.caller.empty() ? object_named_at(caller) : r.caller;
    std::fprintf(stderr, "ldshim: %s(\"%s\") from %s%s%s: %s%s%s%s%s\n", call, file, who.c_str(),
                 via.empty() ? "" : " via ", via.c_str(), kind, *rule ? " via " : "", rule,
                 r.path.empty() ? "" : " -> ", r.path.c_str());
    if (!r.error.empty()) std::fprintf(stderr, "ldshim:   %s\n", r.error.c_str());
}

// Asks the model, with this thread marked as inside ldshim: the model's
// construction may dlopen, and that call must pass through rather than
// re-enter (the model is built once; a recursive build would abort).
// False when re-entered, while another thread builds the model, or out of
// memory.
bool ask_model(const void* caller, const char* file, int mode, bool fresh_namespace, bool details,
               Resolution& r) noexcept {
    if (t_inside) return false;
    t_inside = true;
    bool ok = true;
    try {
        LiveProcess* lp = LiveProcess::instance();
        if (lp)
            r = lp->resolve(caller, file, (mode & RTLD_NOLOAD) != 0, details, fresh_namespace);
        else
            ok = false;
    } catch (...) {
        ok = false;
    }
    t_inside = false;
    return ok;
}

// What glibc would do for `file` from `caller`.  False: ldshim has no answer
// and the call must pass through.
bool decide(const char* call, const void* caller, const char* file, int mode, bool fresh_namespace, const void* next,
            Resolution& r) noexcept {
    const host::Settings& settings = host::settings();
    if (!file || !host::settings_ready() || settings.disabled) return false;
    if (!ask_model(caller, file, mode, fresh_namespace, settings.debug, r)) return false;
    if (settings.debug) {
        try {
            log_decision(call, file, r, caller, next);
        } catch (...) {
        }
    }
    return r.kind != Resolution::Kind::unresolved;
}

// One call into ldshim's dlopen: dlopen(file, mode), or, where dlmopen_next
// is set, dlmopen(lmid, file, mode); `next` is what it goes on to (never
// null here).
struct Request {
    ldshim_dlopen_fn dlopen_next = nullptr;
    ldshim_dlmopen_fn dlmopen_next = nullptr;
    long lmid = LM_ID_BASE;
    const void* caller = nullptr;
    const char* file = nullptr;
    int mode = 0;
    bool report_unresolved = false;  // the model's reason becomes this thread's error (ldshim_dlopen_try)

    bool dlmopen() const { return dlmopen_next != nullptr; }
    // Whether `next` is glibc's own (no wrapper that could send a call back).
    bool glibc_next() const {
        if (dlmopen()) return dlmopen_next == host::libc_dlmopen_function();
        return dlopen_next == &host::libc_dlopen || dlopen_next == host::libc_dlopen_function();
    }
    void* next_id() const {
        return dlmopen() ? reinterpret_cast<void*>(dlmopen_next) : reinterpret_cast<void*>(dlopen_next);
    }
    void* open(const char* path, int m) const { return dlmopen() ? dlmopen_next(lmid, path, m) : dlopen_next(path, m); }
};

// What the core made of a Request.
enum class Verdict : std::uint8_t {
    answered,    // carried out: *handle is what the call returns
    as_asked,    // glibc's own, reached unchanged, gives exactly ldshim's answer
    to_glibc,    // ldshim's own forwarding come back (below): glibc's own, not round again
    go_on,       // not ldshim's (off, not started, re-entered, another namespace): `next`, unchanged
    unresolved,  // the model cannot answer for this process: `next`, unchanged
};

// After an open that may have loaded something: the model and the hooks
// learn what changed.  `link_map`: `h` is glibc's own handle (another
// dlopen's is not read).
[[gnu::noinline]] void note_opened(void* h, bool link_map) {
    if (LiveProcess* lp = LiveProcess::existing()) lp->note_opened(link_map ? h : nullptr);
    if (h) hooks::Patcher::instance().refresh();  // patch what this dlopen brought in
}

// q.open(path, mode), remembered so that a call that comes straight back is
// recognised.
inline void* open_through(const Request& q, const char* path, int mode, bool changes) {
    const char* saved_file = t_forwarded_file;
    void* saved_next = t_forwarded_next;
    t_forwarded_file = path;
    t_forwarded_next = q.next_id();
    void* h = q.open(path, mode);
    t_forwarded_file = saved_file;
    t_forwarded_next = saved_next;
    if (changes) note_opened(h, q.dlopen_next == &host::libc_dlopen);
    return h;
}

// The already-loaded fast path (LiveProcess::loaded_fast): no lock, no walk,
// no allocation.  Not while logging (each decision is printed), nor inside
// the model, nor before the model exists.  `handed` is a name glibc knows
// the loaded object by (nullptr for the main program).  glibc looks for a
// loaded object by name before any search, in load order and whoever calls,
// so it gives the same object and the same bookkeeping (a SONAME match is
// recorded as glibc records it); where that name is the one asked for,
// glibc is spared a long strcmp of an absolute l_name against every loaded
// object's name.
bool loaded_fast(const char* file, const char*& handed) noexcept {
    if (!file || t_inside || !host::settings_ready()) return false;
    const host::Settings& settings = host::settings();
    if (settings.disabled || settings.debug) return false;
    const LiveProcess* lp = LiveProcess::existing();
    return lp && lp->loaded_fast(file, handed);
}

bool came_back(const char* file, const void* next) {
    return file && file == t_forwarded_file && next == t_forwarded_next;
}

// What this thread is handing to `next` reaching ldshim again through
// another entry: an interposer in front of ldshim passed it on to the next
// dlopen, ldshim's own (dlsym(RTLD_NEXT), or a GOT patcher's saved
// original).  It was decided once, so it goes on to this entry's `next`
// unanswered; deciding it again would take the path for the request and
// lose the name asked for.
bool passing_through(const char* file) { return file && file == t_forwarded_file; }

// glibc's own dlopen(file, mode), or dlmopen(q.lmid, file, mode), called as
// the caller would call it: from a return point in the caller's object
// (hooks/as_caller.h), so glibc takes the caller's search lists.  False
// where there is none (a shadow stack, LDSHIM_RETURN_POINTS=0).
bool glibc_as_caller(const Request& q, const char* file, int mode, void** handle) {
    void* fn = q.dlmopen() ? reinterpret_cast<void*>(host::libc_dlmopen_function())
                           : reinterpret_cast<void*>(host::libc_dlopen_function());
    std::optional<hooks::ReturnPoint> rp = fn ? hooks::return_point_in(q.caller) : std::nullopt;
    if (!rp) return false;
    const auto* m = reinterpret_cast<const void*>(static_cast<std::uintptr_t>(mode));
    *handle = q.dlmopen() ? hooks::call_from(*rp, fn, reinterpret_cast<void*>(q.lmid), file, m)
                          : hooks::call_from(*rp, fn, const_cast<char*>(file), m, nullptr);
    return true;
}

// Lets glibc learn what the model's search learnt (Resolution::
// record_changed): glibc runs the same search for the true caller, with
// RTLD_NOLOAD, so it loads nothing.  Without a return point glibc's record
// stays behind the model's.  True when glibc was asked (its dlerror() then
// holds its own answer).
bool let_glibc_search(const Request& q, const Resolution& r) {
    if (!r.record_changed || q.lmid != LM_ID_BASE || std::strchr(q.file, '/')) return false;
    void* h = nullptr;
    if (!glibc_as_caller(q, q.file, RTLD_LAZY | RTLD_NOLOAD, &h)) return false;
    if (h) dlclose(h);  // already loaded: it took a reference
    return true;
}

// After `next` opened the model's answer by its path: glibc knows the
// object by that path and its SONAME, but not by the name the caller asked
// for (Resolution::name_added), which its own search would have added; a
// later DT_NEEDED of that name would then be searched for again, and fail
// or load a second copy.  The same search from the caller with RTLD_NOLOAD
// reaches the object's file, and glibc adds the name and returns it
// (elf/dl-load.c, _dl_map_object_from_fd: the identity check comes before
// the RTLD_NOLOAD test); it loads nothing.  Where `next` opened another
// file (a path translator's), that search finds no loaded object and adds
// nothing.  Without a return point only a name whose search does not
// depend on the caller (a slash and no dynamic string token) is taught.
// Too late for one shape: an object that needs itself by the name asked
// for has already failed to load.
void teach_name(const Request& q, const Resolution& r) {
    if (!r.name_added || q.lmid != LM_ID_BASE) return;
    void* h = nullptr;
    if (!glibc_as_caller(q, q.file, RTLD_LAZY | RTLD_NOLOAD, &h)) {
        ldshim_dlopen_fn glibc = host::libc_dlopen_function();
        if (!glibc || !std::strchr(q.file, '/') || std::strchr(q.file, '$')) {
            if (host::settings().debug)
                std::fprintf(stderr,
                             "ldshim:   no return point (a shadow stack, or LDSHIM_RETURN_POINTS=0): glibc does not "
                             "know %s by \"%s\"; a later need of that name is searched for again\n",
                             r.path.c_str(), q.file);
            return;
        }
        h = glibc(q.file, RTLD_LAZY | RTLD_NOLOAD);
    }
    if (h) {
        dlclose(h);  // the reference it took
    } else if (host::dlerror_fn take = host::libc_dlerror_function()) {
        take();  // its failure is not the caller's: the caller's dlopen succeeded
    }
}

// A path that glibc, handed it, would not take to the object the model
// means: a new object's name without '/' (a file found in the current
// directory through an empty list element), which it would search for
// again from ldshim, or a name another loaded object has too (a file
// replaced under a loaded one's path and loaded anew), by which it would
// return the first of them.  glibc is asked as the caller instead, and does
// what it would have done.  Without a return point it is handed the path
// spelt so that no loaded object has it as a name ("./NAME", "DIR/./NAME"):
// it opens the file, and knows a loaded one by its identity.
bool glibc_must_open_itself(const Resolution& r) {
    return r.path_names_another || (r.kind == Resolution::Kind::found && !std::strchr(r.path.c_str(), '/'));
}

// An object the load brings in needs the name asked for
// (Resolution::name_needed_by_load): opened by its path, the load would
// fail, and teaching the name afterwards is too late.  glibc opens it
// first, as the caller with the name; `next` then opens the path and finds
// it loaded, so the interposer still sees the call and what it returns.
// The reference glibc's open took is dropped again.  Without a return
// point, `next` opens the path and the load fails as before.
void* open_needed_by_itself(const Request& q, const Resolution& r) {
    void* first = nullptr;
    if (!glibc_as_caller(q, q.file, q.mode, &first)) return open_through(q, r.path.c_str(), q.mode, true);
    note_opened(first, true);
    if (!first) return nullptr;  // glibc's own failure, in its dlerror()
    void* h = open_through(q, r.path.c_str(), q.mode, false);
    dlclose(first);
    return h;
}

void* open_found_by_glibc(const Request& q, const Resolution& r) {
    void* h = nullptr;
    if (q.lmid == LM_ID_BASE && glibc_as_caller(q, q.file, q.mode, &h)) {
        note_opened(h, true);
        return h;
    }
    const std::size_t slash = r.path.rfind('/');
    const std::string spelt =
        slash == std::string::npos ? "./" + r.path : r.path.substr(0, slash) + "/." + r.path.substr(slash);
    return open_through(q, spelt.c_str(), q.mode, q.lmid == LM_ID_BASE);
}

// The model's answer `r` (loaded, found or not found: decide() passes an
// unresolved request on unanswered), carried out so that glibc ends up
// holding what it would hold had the caller called it itself.
void* open_answer(const Request& q, const Resolution& r) {
    const bool base = q.lmid == LM_ID_BASE;
    // `next` is glibc's own and the answer is an object: glibc is called as
    // the caller with the name asked for.  Its search is the model's, so it
    // reaches the same object, and it is exact by construction where a path
    // is not: glibc records the name (an object that needs itself by it
    // included) and the directories its search learnt about.  Not for a
    // failure: glibc's text then depends on its own errno, which ldshim's
    // own loads (the model's probe) have moved since start-up; the model's
    // text is the one glibc alone would give.
    if (void* h = nullptr;
        r.kind != Resolution::Kind::not_found && q.glibc_next() && glibc_as_caller(q, q.file, q.mode, &h)) {
        set_error(kNoError);
        if (base && r.kind == Resolution::Kind::found) note_opened(h, true);
        return h;
    }
    // `next` is an interposer (ucm, a sanitizer, a path translator), which
    // must see the call, or there is no return point, or nothing was found:
    // `next` opens the answer by its path, and glibc is taught the rest.
    set_error(r.kind == Resolution::Kind::not_found ? r.error : kNoError);
    if (glibc_must_open_itself(r)) return open_found_by_glibc(q, r);
    const bool glibc_searched = let_glibc_search(q, r);
    if (r.kind == Resolution::Kind::not_found) {
        // Leave glibc's own dlerror() with the same text: the same name
        // with RTLD_NOLOAD fails the same way when glibc, asked from here,
        // finds nothing either -- and loads nothing if it does.
        if (base && !r.error.empty() && !glibc_searched)
            if (void* n = open_through(q, q.file, q.mode | RTLD_NOLOAD, false)) dlclose(n);
        return nullptr;
    }
    void* h = nullptr;
    if (r.kind == Resolution::Kind::loaded) {
        // By its own name: glibc returns the same object, one more reference.
        h = open_through(q, r.path.empty() ? nullptr : r.path.c_str(), q.mode, false);
    } else if (base && r.name_needed_by_load) {
        return open_needed_by_itself(q, r);
    } else {
        // A new namespace is not the model's: nothing there to follow.
        h = open_through(q, r.path.c_str(), q.mode, base);
    }
    if (h) teach_name(q, r);
    return h;
}

// A request the fast path did not answer: asked of the model.
[[gnu::noinline]] Verdict dlopen_searched(const Request& q, void** handle) {
    const bool base = q.lmid == LM_ID_BASE;
    Resolution r;
    if (!decide(q.dlmopen() ? "dlmopen" : "dlopen", q.caller, q.file, q.mode, !base, q.next_id(), r)) {
        if (r.kind != Resolution::Kind::unresolved) return Verdict::go_on;  // off, or re-entered
        if (q.report_unresolved) set_error(r.error);
        return Verdict::unresolved;
    }
    *handle = open_answer(q, r);
    return Verdict::answered;
}

// The one dlopen core, under every C function and entry of ldshim's dlopen
// and dlmopen.  A call that a wrapper sends straight back (it saved
// ldshim's entry as its original) goes to glibc instead of round again.
// The base namespace is dlopen's.  A fresh namespace is empty, so its
// search depends only on the caller and the process-wide state: ldshim can
// answer it.  An existing other namespace is invisible to ldshim: glibc
// decides.
inline Verdict dlopen_core(const Request& q, void** handle) {
    if (came_back(q.file, q.next_id())) return Verdict::to_glibc;
    if (passing_through(q.file)) return Verdict::go_on;
    const bool base = q.lmid == LM_ID_BASE;
    if (!base && q.lmid != LM_ID_NEWLM) return Verdict::go_on;
    if (const char* handed = nullptr; base && loaded_fast(q.file, handed)) {
        set_error(kNoError);
        // Loaded, and glibc knows it by the very name asked for: glibc's own
        // dlopen, reached unchanged, finds it by that name before any
        // search, whoever calls -- and the call leaves ldshim's frames.
        if (handed == q.file && q.glibc_next()) return Verdict::as_asked;
        *handle = open_through(q, handed, q.mode, false);
        return Verdict::answered;
    }
    return dlopen_searched(q, handle);
}

// What a dlopen ldshim does not carry out goes on to: `f`, but glibc's own
// dlopen rather than ldshim's wrapper of it, whose frame would become the
// caller.
ldshim_dlopen_fn unwrapped(ldshim_dlopen_fn f) {
    if (f != host::libc_dlopen) return f;
    ldshim_dlopen_fn own = host::libc_dlopen_function();
    return own ? own : f;
}

// The decide form (ldshim.h: ldshim_dlopen_decide).
ldshim_dlopen_fn dlopen_decide(ldshim_dlopen_fn next, const void* caller, const char* file, int mode, void** handle) {
    Request q{next ? next : host::libc_dlopen, nullptr, LM_ID_BASE, caller, file, mode};
    switch (dlopen_core(q, handle)) {
        case Verdict::answered: return nullptr;
        case Verdict::as_asked:
        case Verdict::to_glibc: return unwrapped(host::libc_dlopen);
        default: return unwrapped(q.dlopen_next);
    }
}

void* dlopen_via(ldshim_dlopen_fn next, const void* caller, const char* file, int mode) {
    return decide_then_go_on([&](auto... a) { return dlopen_decide(next, caller, a...); }, file, mode);
}

}  // namespace

}  // namespace ldshim::resolver

using namespace ldshim::resolver;

extern "C" {

ldshim_dlopen_fn ldshim_dlopen_decide(ldshim_dlopen_fn next, const void* caller, const char* file, int mode,
                                      void** handle) {
    return dlopen_decide(next, caller, file, mode, handle);
}

void* ldshim_dlopen_via(void* (*next)(const char*, int), const void* caller, const char* file, int mode) {
    return dlopen_via(next, caller, file, mode);
}

ldshim_status ldshim_dlopen_try(void* (*next)(const char*, int), const void* caller, const char* file, int mode,
                                void** handle) {
    if (!file || !handle) return LDSHIM_ERR_INVALID_ARGUMENT;
    Request q{next ? next : ldshim::host::libc_dlopen, nullptr, LM_ID_BASE, caller, file, mode, true};
    switch (dlopen_core(q, handle)) {
        case Verdict::answered: return LDSHIM_OK;
        case Verdict::as_asked: *handle = unwrapped(ldshim::host::libc_dlopen)(file, mode); return LDSHIM_OK;
        case Verdict::unresolved: return LDSHIM_ERR_SYSTEM;
        default: return LDSHIM_ERR_UNSUPPORTED;  // off, re-entered, or its own forwarding come back
    }
}

void* ldshim_dlopen_from(const void* caller, const char* file, int mode) {
    return dlopen_via(ldshim::host::libc_dlopen, caller, file, mode);
}

void* ldshim_dlopen(const char* file, int mode) {
    return dlopen_via(ldshim::host::libc_dlopen, __builtin_return_address(0), file, mode);
}

ldshim_dlmopen_fn ldshim_dlmopen_decide(ldshim_dlmopen_fn next, long lmid, const void* caller, const char* file,
                                        int mode, void** handle) {
    if (!next) next = ldshim::host::libc_dlmopen_function();
    if (!next) {
        *handle = nullptr;  // no dlmopen in this process to go on to
        return nullptr;
    }
    Request q{nullptr, next, lmid, caller, file, mode};
    switch (dlopen_core(q, handle)) {
        case Verdict::answered: return nullptr;
        case Verdict::as_asked:
        case Verdict::to_glibc: {
            ldshim_dlmopen_fn own = ldshim::host::libc_dlmopen_function();
            return own ? own : next;
        }
        default: return next;
    }
}

void* ldshim_dlmopen_via(void* (*next)(long, const char*, int), long lmid, const void* caller, const char* file,
                         int mode) {
    return ldshim::decide_then_go_on(
        [&](long l, const char* f, int m, void** h) { return ldshim_dlmopen_decide(next, l, caller, f, m, h); }, lmid,
        file, mode);
}

void* ldshim_dlmopen_from(long lmid, const void* caller, const char* file, int mode) {
    return ldshim_dlmopen_via(nullptr, lmid, caller, file, mode);
}

ldshim_status ldshim_resolve(const void* caller, const char* file, int mode, char* path, size_t size) {
    if (!file || (!path && size)) return LDSHIM_ERR_INVALID_ARGUMENT;
    Resolution r;
    if (!ask_model(caller, file, mode, false, false, r))
        return t_inside ? LDSHIM_ERR_UNSUPPORTED : LDSHIM_ERR_NO_MEMORY;
    if (r.kind == Resolution::Kind::unresolved || r.kind == Resolution::Kind::not_found) {
        set_error(r.error);
        return r.kind == Resolution::Kind::unresolved ? LDSHIM_ERR_SYSTEM : LDSHIM_ERR_NOT_FOUND;
    }
    if (r.path.size() + 1 > size) return LDSHIM_ERR_BUFFER_TOO_SMALL;
    std::memcpy(path, r.path.c_str(), r.path.size() + 1);
    return r.kind == Resolution::Kind::loaded ? LDSHIM_ALREADY_LOADED : LDSHIM_OK;
}

char* ldshim_dlerror_via(char* (*next)(void)) {
    if (!next) next = ldshim::host::libc_dlerror_function();
    if (t_error_set) {
        t_error_set = false;
        // glibc holds the same failure (open_answer left it there for callers
        // of dlerror()): it is taken with ldshim's, or a later call that
        // fails without a text of its own would show it again.
        if (next) next();
        try {
            t_shown = t_error;
            return t_shown.data();
        } catch (...) {
        }
    }
    return next ? next() : nullptr;
}

char* ldshim_dlerror(void) { return ldshim_dlerror_via(nullptr); }

}  // extern "C"
