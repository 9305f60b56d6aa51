// libldshim_preload.so: with LD_PRELOAD, every dlopen and dlmopen in the
// process -- and every call that UCX's ucm diverted to ucm_dlopen -- is
// resolved from its true caller (the return address of the call).
// The only place in ldshim that defines interposing symbols and reads
// LDSHIM_* variables:
//   LDSHIM_DISABLE=1     inert: calls go straight to glibc
//   LDSHIM_DEBUG=1       one line per decision on stderr
//   LDSHIM_CUDA_HOOKS=1  install the CUDA hooks (from libldshim.so.0, loaded
//                        from this library's directory) before main
//   LDSHIM_HOOKS_LOG=F   at exit, write the hooks' operation log to file F
// All are ignored in secure mode (AT_SECURE), like LD_DEBUG.
#include "ldshim.h"
#include "loader/live.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>

using ldshim::loader::LiveProcess;
using ldshim::loader::Resolution;

namespace {

using dlopen_fn = void* (*)(const char*, int);
using dlmopen_fn = void* (*)(Lmid_t, const char*, int);
using dlerror_fn = char* (*)();

// A guest may be called before its constructors ran and from inside another
// tool's initialisation (a sanitizer's runtime calls dlerror() while it sets
// itself up).  So the state here is constant-initialised: no function-local
// static, whose guard would abort on recursion (recursive_init_error), and
// nothing with a destructor to register.  Until the constructor has read
// the environment, every entry point passes its call through unchanged.
struct Settings {
    bool disabled;
    bool debug;
    bool cuda_hooks;
    const char* hooks_log;  // in the environment, which outlives us
};
Settings g_settings{};
std::atomic<bool> g_ready{false};

// The next definitions in symbol order, looked up on first use.  Idempotent,
// so a race or a re-entrant call only repeats the lookup.
std::atomic<dlopen_fn> g_next_dlopen{nullptr};
std::atomic<dlmopen_fn> g_next_dlmopen{nullptr};
std::atomic<dlerror_fn> g_next_dlerror{nullptr};

template <class Fn>
Fn next_symbol(std::atomic<Fn>& slot, const char* name) {
    Fn f = slot.load(std::memory_order_acquire);
    if (!f) {
        f = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
        slot.store(f, std::memory_order_release);
    }
    return f;
}
dlopen_fn real_dlopen() { return next_symbol(g_next_dlopen, "dlopen"); }
dlmopen_fn real_dlmopen() { return next_symbol(g_next_dlmopen, "dlmopen"); }
dlerror_fn real_dlerror() { return next_symbol(g_next_dlerror, "dlerror"); }

bool flag(const char* name) {
    const char* v = std::getenv(name);
    return v && *v && *v != '0';
}

// Set while this thread is inside ldshim's own resolution: a dlopen that the
// model's construction or a tool's interceptor makes from there goes
// straight through.  Initial-exec TLS: no allocation, no lazy set-up.
[[gnu::tls_model("initial-exec")]] thread_local bool t_inside = false;

// Resolution is active once the constructor ran, unless switched off.
bool active() { return g_ready.load(std::memory_order_acquire) && !g_settings.disabled && !t_inside; }

// The hooks live in libldshim.so.0 (one registry per process, shared with
// programs that use the C API), loaded from this library's own directory.
struct HooksApi {
    int (*install)(unsigned) = nullptr;
    int (*refresh)() = nullptr;
    int (*log_write)(int) = nullptr;
};
HooksApi g_hooks;

void load_hooks() {
    Dl_info self;
    if (!dladdr(reinterpret_cast<void*>(&load_hooks), &self) || !self.dli_fname) return;
    std::string dir = self.dli_fname;
    dir.erase(dir.find_last_of('/') + 1);
    void* h = real_dlopen()((dir + "libldshim.so.0").c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!h) {
        std::fprintf(stderr, "ldshim: LDSHIM_CUDA_HOOKS: cannot load %slibldshim.so.0: %s\n", dir.c_str(),
                     real_dlerror()());
        return;
    }
    HooksApi api;
    api.install = reinterpret_cast<int (*)(unsigned)>(dlsym(h, "ldshim_hooks_install"));
    api.refresh = reinterpret_cast<int (*)()>(dlsym(h, "ldshim_hooks_refresh"));
    api.log_write = reinterpret_cast<int (*)(int)>(dlsym(h, "ldshim_hooks_log_write"));
    if (!api.install || !api.refresh || !api.log_write) return;
    int rc = api.install(LDSHIM_HOOK_CUDA);
    if (rc != LDSHIM_OK) {
        auto why = reinterpret_cast<const char* (*)(int)>(dlsym(h, "ldshim_strerror"));
        std::fprintf(stderr, "ldshim: LDSHIM_CUDA_HOOKS: %s\n", why ? why(rc) : "failed");
        return;
    }
    g_hooks = api;
}

void write_hooks_log() {
    if (!g_settings.hooks_log || !g_hooks.log_write) return;
    int fd = open(g_settings.hooks_log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return;
    g_hooks.log_write(fd);
    close(fd);
}

// Reads the environment and looks the real functions up before main:
// dlsym() itself clears the pending dlerror() state, so it must not run for
// the first time inside dlerror().  The variables are ignored in secure mode.
__attribute__((constructor)) void init_settings() {
    real_dlopen();
    real_dlmopen();
    real_dlerror();
    Settings s{};
    if (!getauxval(AT_SECURE)) {
        s.disabled = flag("LDSHIM_DISABLE");
        s.debug = flag("LDSHIM_DEBUG");
        s.cuda_hooks = flag("LDSHIM_CUDA_HOOKS");
        s.hooks_log = std::getenv("LDSHIM_HOOKS_LOG");
    }
    g_settings = s;
    g_ready.store(true, std::memory_order_release);
    if (s.cuda_hooks && !s.disabled) {
        load_hooks();
        if (s.hooks_log) std::atexit(write_hooks_log);
    }
}

// A failed resolution: glibc's text, handed out by the next dlerror().
thread_local std::string t_error;
thread_local std::string t_shown;  // what the last dlerror() returned
thread_local bool t_pending = false;

void set_error(const std::string& e) noexcept {
    try {
        t_error = e;
        t_pending = !e.empty();
    } catch (...) {
        t_pending = false;  // no memory for the text: glibc's own dlerror() speaks
    }
}

void log_decision(const char* file, const Resolution& r) {
    const char* kind = r.kind == Resolution::Kind::loaded      ? "already loaded"
                       : r.kind == Resolution::Kind::found     ? "found"
                       : r.kind == Resolution::Kind::not_found ? "not found"
                                                               : "unresolved (passed to glibc)";
    std::fprintf(stderr, "ldshim: dlopen(\"%s\") from %s: %s%s%s%s%s\n", file, r.caller.c_str(), kind,
                 *r.rule ? " via " : "", r.rule, r.path.empty() ? "" : " -> ", r.path.c_str());
    if (!r.error.empty()) std::fprintf(stderr, "ldshim:   %s\n", r.error.c_str());
}

// Resolves `file` as `caller` would have, with this thread marked as inside
// ldshim.  False when ldshim has no answer (inactive, re-entered, out of
// memory): the caller then passes the call through unchanged.  ucm runs its
// own search on every path that is not absolute, so for it a relative result
// is made absolute (same file; l_name then differs from glibc's).
bool decide(const void* caller, const char* file, int mode, bool fresh_namespace, bool absolute_paths,
            Resolution& r) noexcept {
    if (!file || !active()) return false;
    t_inside = true;
    bool ok = true;
    try {
        r = LiveProcess::instance().resolve(caller, file, (mode & RTLD_NOLOAD) != 0, g_settings.debug,
                                            fresh_namespace);
        if (g_settings.debug) log_decision(file, r);
        if (r.kind == Resolution::Kind::found && absolute_paths && !r.path.empty() && r.path[0] != '/') {
            char cwd[4096];
            if (getcwd(cwd, sizeof cwd)) r.path = std::string(cwd) + "/" + r.path;
        }
    } catch (...) {
        ok = false;
    }
    t_inside = false;
    return ok && r.kind != Resolution::Kind::failed;
}

// Resolves from `caller` and opens through `next`: what the caller's call
// would have reached (glibc's dlopen, or ucm's).
void* resolve_and_open(dlopen_fn next, const void* caller, const char* file, int mode,
                       bool absolute_paths = false) noexcept {
    Resolution r;
    if (!decide(caller, file, mode, false, absolute_paths, r)) return next(file, mode);
    switch (r.kind) {
        case Resolution::Kind::loaded:
            t_pending = false;
            return next(r.path.empty() ? nullptr : r.path.c_str(), mode);
        case Resolution::Kind::found: {
            t_pending = false;
            void* h = next(r.path.c_str(), mode);
            LiveProcess::instance().note_changed();
            if (h && g_hooks.refresh) g_hooks.refresh();  // patch what this dlopen brought in
            return h;
        }
        case Resolution::Kind::not_found:
            set_error(r.error);
            return nullptr;
        case Resolution::Kind::failed: break;
    }
    return next(file, mode);
}

// UCX's ucm, in reloc mode, writes the address of its exported ucm_dlopen
// into every object's dlopen GOT slot.  libucm takes that address through a
// symbolic relocation, so with this library preloaded it is this function
// that lands in the slots, called with the return address of the real
// caller.  It resolves from there and hands libucm's own ucm_dlopen an
// explicit path, so ucm still sees (and patches) every new library.
std::atomic<dlopen_fn> g_libucm_dlopen{nullptr};
dlopen_fn libucm_dlopen() {
    if (dlopen_fn f = g_libucm_dlopen.load(std::memory_order_acquire)) return f;
    // Looked up in libucm's own scope, where this library's definition is not.
    void* h = real_dlopen()("libucm.so.0", RTLD_NOW | RTLD_NOLOAD);
    dlopen_fn f = h ? reinterpret_cast<dlopen_fn>(dlsym(h, "ucm_dlopen")) : nullptr;
    if (h) dlclose(h);
    if (f) g_libucm_dlopen.store(f, std::memory_order_release);
    return f;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) void* dlopen(const char* file, int mode) {
    return resolve_and_open(real_dlopen(), __builtin_return_address(0), file, mode);
}

__attribute__((visibility("default"))) void* ucm_dlopen(const char* file, int mode) {
    const void* caller = __builtin_return_address(0);
    dlopen_fn ucm = active() ? libucm_dlopen() : nullptr;
    return resolve_and_open(ucm ? ucm : real_dlopen(), caller, file, mode, ucm != nullptr);
}

__attribute__((visibility("default"))) void* dlmopen(Lmid_t lmid, const char* file, int mode) {
    const void* caller = __builtin_return_address(0);
    if (lmid == LM_ID_BASE) return resolve_and_open(real_dlopen(), caller, file, mode);
    // Only a fresh namespace can be resolved (ldshim cannot see inside others).
    Resolution r;
    if (lmid != LM_ID_NEWLM || !decide(caller, file, mode, true, false, r)) return real_dlmopen()(lmid, file, mode);
    if (r.kind == Resolution::Kind::found) {
        t_pending = false;
        return real_dlmopen()(LM_ID_NEWLM, r.path.c_str(), mode);
    }
    if (r.kind == Resolution::Kind::not_found) {
        set_error(r.error);
        return nullptr;
    }
    return real_dlmopen()(lmid, file, mode);
}

__attribute__((visibility("default"))) char* dlerror(void) {
    if (t_pending) {
        t_pending = false;
        try {
            t_shown = t_error;
            return t_shown.data();
        } catch (...) {
        }
    }
    return real_dlerror()();
}

}  // extern "C"
