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

struct Settings {
    bool disabled = false;
    bool debug = false;
    bool cuda_hooks = false;
    std::string hooks_log;
    void* (*real_dlopen)(const char*, int) = nullptr;
    void* (*real_dlmopen)(Lmid_t, const char*, int) = nullptr;
    char* (*real_dlerror)() = nullptr;
};

const Settings& settings() {
    static const Settings s = [] {
        Settings t;
        t.real_dlopen = reinterpret_cast<void* (*)(const char*, int)>(dlsym(RTLD_NEXT, "dlopen"));
        t.real_dlmopen = reinterpret_cast<void* (*)(Lmid_t, const char*, int)>(dlsym(RTLD_NEXT, "dlmopen"));
        t.real_dlerror = reinterpret_cast<char* (*)()>(dlsym(RTLD_NEXT, "dlerror"));
        if (!getauxval(AT_SECURE)) {
            const char* d = std::getenv("LDSHIM_DISABLE");
            const char* g = std::getenv("LDSHIM_DEBUG");
            const char* c = std::getenv("LDSHIM_CUDA_HOOKS");
            const char* l = std::getenv("LDSHIM_HOOKS_LOG");
            t.disabled = d && *d && *d != '0';
            t.debug = g && *g && *g != '0';
            t.cuda_hooks = c && *c && *c != '0';
            if (l) t.hooks_log = l;
        }
        return t;
    }();
    return s;
}

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
    void* h = settings().real_dlopen((dir + "libldshim.so.0").c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!h) {
        std::fprintf(stderr, "ldshim: LDSHIM_CUDA_HOOKS: cannot load %slibldshim.so.0: %s\n", dir.c_str(),
                     settings().real_dlerror());
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
    const Settings& s = settings();
    if (s.hooks_log.empty() || !g_hooks.log_write) return;
    int fd = open(s.hooks_log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return;
    g_hooks.log_write(fd);
    close(fd);
}

// Look the real functions up before main: dlsym() itself clears the pending
// dlerror() state, so it must not run for the first time inside dlerror().
__attribute__((constructor)) void init_settings() {
    const Settings& s = settings();
    if (s.cuda_hooks && !s.disabled) {
        load_hooks();
        if (!s.hooks_log.empty()) std::atexit(write_hooks_log);
    }
}

// A failed resolution: glibc's text, handed out by the next dlerror().
thread_local std::string t_error;
thread_local bool t_pending = false;

void log_decision(const char* file, const Resolution& r) {
    const char* kind = r.kind == Resolution::Kind::loaded      ? "already loaded"
                       : r.kind == Resolution::Kind::found     ? "found"
                       : r.kind == Resolution::Kind::not_found ? "not found"
                                                               : "unresolved (passed to glibc)";
    std::fprintf(stderr, "ldshim: dlopen(\"%s\") from %s: %s%s%s%s%s\n", file, r.caller.c_str(), kind,
                 *r.rule ? " via " : "", r.rule, r.path.empty() ? "" : " -> ", r.path.c_str());
    if (!r.error.empty()) std::fprintf(stderr, "ldshim:   %s\n", r.error.c_str());
}

// Resolves from `caller` and opens through `next`: glibc's dlopen, or ucm's.
// ucm runs its own search on every path that is not absolute, so for it a
// relative result is made absolute (same file; l_name then differs from
// glibc's, which keeps the relative string).
void* resolve_and_open(void* (*next)(const char*, int), const void* caller, const char* file, int mode,
                       bool absolute_paths = false) {
    const Settings& s = settings();
    if (s.disabled || !file) return next(file, mode);
    Resolution r;
    try {
        r = LiveProcess::instance().resolve(caller, file, (mode & RTLD_NOLOAD) != 0, s.debug);
    } catch (...) {
        return s.real_dlopen(file, mode);
    }
    if (s.debug) log_decision(file, r);
    switch (r.kind) {
        case Resolution::Kind::loaded:
            t_pending = false;
            return next(r.path.empty() ? nullptr : r.path.c_str(), mode);
        case Resolution::Kind::found: {
            t_pending = false;
            if (absolute_paths && !r.path.empty() && r.path[0] != '/') {
                char cwd[4096];
                if (getcwd(cwd, sizeof cwd)) r.path = std::string(cwd) + "/" + r.path;
            }
            void* h = next(r.path.c_str(), mode);
            LiveProcess::instance().note_changed();
            if (h && g_hooks.refresh) g_hooks.refresh();  // patch what this dlopen brought in
            return h;
        }
        case Resolution::Kind::not_found:
            t_pending = !r.error.empty();
            t_error = r.error;
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
using dlopen_fn = void* (*)(const char*, int);
dlopen_fn libucm_dlopen() {
    static std::atomic<dlopen_fn> cached{nullptr};
    if (dlopen_fn f = cached.load(std::memory_order_acquire)) return f;
    // Looked up in libucm's own scope, where this library's definition is not.
    void* h = settings().real_dlopen("libucm.so.0", RTLD_NOW | RTLD_NOLOAD);
    dlopen_fn f = h ? reinterpret_cast<dlopen_fn>(dlsym(h, "ucm_dlopen")) : nullptr;
    if (h) dlclose(h);
    if (f) cached.store(f, std::memory_order_release);
    return f;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) void* dlopen(const char* file, int mode) {
    return resolve_and_open(settings().real_dlopen, __builtin_return_address(0), file, mode);
}

__attribute__((visibility("default"))) void* ucm_dlopen(const char* file, int mode) {
    dlopen_fn next = libucm_dlopen();
    return resolve_and_open(next ? next : settings().real_dlopen, __builtin_return_address(0), file, mode, next != nullptr);
}

__attribute__((visibility("default"))) void* dlmopen(Lmid_t lmid, const char* file, int mode) {
    const Settings& s = settings();
    const void* caller = __builtin_return_address(0);
    if (lmid == LM_ID_BASE) return resolve_and_open(s.real_dlopen, caller, file, mode);
    // Only a fresh namespace can be resolved (ldshim cannot see inside others).
    if (s.disabled || lmid != LM_ID_NEWLM || !file) return s.real_dlmopen(lmid, file, mode);
    Resolution r;
    try {
        r = LiveProcess::instance().resolve(caller, file, (mode & RTLD_NOLOAD) != 0, s.debug, true);
    } catch (...) {
        return s.real_dlmopen(lmid, file, mode);
    }
    if (s.debug) log_decision(file, r);
    if (r.kind == Resolution::Kind::found) {
        t_pending = false;
        return s.real_dlmopen(LM_ID_NEWLM, r.path.c_str(), mode);
    }
    if (r.kind == Resolution::Kind::not_found) {
        t_pending = !r.error.empty();
        t_error = r.error;
        return nullptr;
    }
    return s.real_dlmopen(lmid, file, mode);
}

__attribute__((visibility("default"))) char* dlerror(void) {
    if (t_pending) {
        t_pending = false;
        static thread_local std::string shown;
        shown = t_error;
        return shown.data();
    }
    return settings().real_dlerror();
}

}  // extern "C"
