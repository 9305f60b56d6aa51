// libldshim_preload.so: with LD_PRELOAD, every dlopen and dlmopen in the
// process is resolved from its true caller, whatever else interposes them.
// A thin edge over libldshim.so.0 (its dependency, found next to it), so a
// process holds one model and one set of hooks:
//   - at start-up it asks libldshim to put ldshim in front of every object's
//     dlopen/dlmopen import slots (LDSHIM_HOOK_DLOPEN): a sanitizer or a
//     profiler that comes first in LD_PRELOAD then still sees every call, but
//     after ldshim has resolved it from the real caller;
//   - it defines dlopen, dlmopen and dlerror for calls that do not go through
//     a slot (function pointers, dlsym), and ucm_dlopen, the function UCX's
//     ucm writes into slots, so that it lands here with the caller's address.
// Its own variables (ignored in secure mode; LDSHIM_DISABLE and LDSHIM_DEBUG
// are libldshim's):
//   LDSHIM_CUDA_HOOKS=1  install the CUDA hooks too, before main
//   LDSHIM_HOOKS_LOG=F   at exit, write the hooks' operation log to file F
#include "hooks/dlopen_entry.h"
#include "ldshim.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

using dlopen_fn = void* (*)(const char*, int);
using dlmopen_fn = void* (*)(long, const char*, int);
using dlerror_fn = char* (*)();

// The next definitions in symbol order, looked up on first use: idempotent,
// so a race or a call from inside another tool's start-up only repeats the
// lookup.  (No function-local statics: their guards abort on recursion.)
std::atomic<dlopen_fn> g_next_dlopen{nullptr};
std::atomic<dlmopen_fn> g_next_dlmopen{nullptr};
std::atomic<dlerror_fn> g_next_dlerror{nullptr};
std::atomic<dlopen_fn> g_libucm_dlopen{nullptr};

template <class Fn>
Fn next_symbol(std::atomic<Fn>& slot, void* handle, const char* name) {
    Fn f = slot.load(std::memory_order_acquire);
    if (!f) {
        f = reinterpret_cast<Fn>(dlsym(handle, name));
        if (f) slot.store(f, std::memory_order_release);
    }
    return f;
}
dlopen_fn next_dlopen() { return next_symbol(g_next_dlopen, RTLD_NEXT, "dlopen"); }
dlmopen_fn next_dlmopen() { return next_symbol(g_next_dlmopen, RTLD_NEXT, "dlmopen"); }
dlerror_fn next_dlerror() { return next_symbol(g_next_dlerror, RTLD_NEXT, "dlerror"); }

// libucm's own ucm_dlopen, looked up in libucm's scope (where this library's
// definition is not), or null without UCX.
dlopen_fn libucm_dlopen() {
    if (dlopen_fn f = g_libucm_dlopen.load(std::memory_order_acquire)) return f;
    void* h = next_dlopen()("libucm.so.0", RTLD_NOW | RTLD_NOLOAD);
    if (!h) return nullptr;
    dlopen_fn f = next_symbol(g_libucm_dlopen, h, "ucm_dlopen");
    dlclose(h);
    return f;
}

// ucm runs its own search on every name that is not an absolute path, so a
// relative result (a name with a slash, as glibc keeps it) is made absolute
// before ucm sees it: the same file.
void* ucm_next(const char* file, int mode) {
    dlopen_fn ucm = libucm_dlopen();
    if (!ucm) return next_dlopen()(file, mode);
    char buf[4096];
    if (file && file[0] != '/' && std::strchr(file, '/') && getcwd(buf, sizeof buf)) {
        std::size_t n = std::strlen(buf);
        if (n + 1 + std::strlen(file) < sizeof buf) {
            buf[n] = '/';
            std::strcpy(buf + n + 1, file);
            return ucm(buf, mode);
        }
    }
    return ucm(file, mode);
}

bool flag(const char* name) {
    const char* v = std::getenv(name);
    return v && *v && *v != '0';
}

const char* g_hooks_log = nullptr;  // in the environment, which outlives us

void write_hooks_log() {
    int fd = open(g_hooks_log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return;
    ldshim_hooks_log_write(fd);
    close(fd);
}

// Looks the next dlerror up before main (dlsym() clears the pending
// dlerror() state, so it must not run for the first time inside dlerror();
// dlopen and dlmopen clear it themselves, so theirs are looked up at their
// first call: a process that never calls them never pays for the lookups),
// then puts ldshim in front of every dlopen slot.
[[gnu::constructor]] void start() {
    next_dlerror();
    const bool secure = getauxval(AT_SECURE) != 0;
    unsigned sets = LDSHIM_HOOK_DLOPEN;
    if (!secure && flag("LDSHIM_CUDA_HOOKS")) sets |= LDSHIM_HOOK_CUDA;
    int rc = ldshim_hooks_install(sets);
    if (rc != LDSHIM_OK && (sets & LDSHIM_HOOK_CUDA)) {
        std::fprintf(stderr, "ldshim: LDSHIM_CUDA_HOOKS: %s\n", ldshim_strerror(rc));
        ldshim_hooks_install(LDSHIM_HOOK_DLOPEN);
    }
    g_hooks_log = secure ? nullptr : std::getenv("LDSHIM_HOOKS_LOG");
    if (g_hooks_log && (sets & LDSHIM_HOOK_CUDA)) std::atexit(write_hooks_log);
}

}  // namespace

extern "C" {

// dlopen, reached by symbol: through dlsym, a saved pointer, or another
// tool's wrapper forwarding with RTLD_NEXT -- then the caller is behind that
// tool.  The entry is hooks/dlopen_entry.h's recipe around this, so a call
// ldshim does not answer reaches the next dlopen from its own caller.
[[gnu::visibility("hidden")]] ldshim_dlopen_fn ldshim_preload_dlopen_decide(const void* return_address,
                                                                            const char* file, int mode, void** handle) {
    return ldshim_dlopen_decide(next_dlopen(), ldshim_caller_behind(return_address), file, mode, handle);
}

#if LDSHIM_HAVE_DLOPEN_ENTRY
LDSHIM_DLOPEN_ENTRY(dlopen, ldshim_preload_dlopen_decide, 0);
#else
__attribute__((visibility("default"))) void* dlopen(const char* file, int mode) {
    void* handle = nullptr;
    ldshim_dlopen_fn go_on = ldshim_preload_dlopen_decide(__builtin_return_address(0), file, mode, &handle);
    return go_on ? go_on(file, mode) : handle;
}
#endif

[[gnu::visibility("hidden")]] ldshim_dlmopen_fn ldshim_preload_dlmopen_decide(const void* return_address, long lmid,
                                                                              const char* file, int mode,
                                                                              void** handle) {
    return ldshim_dlmopen_decide(next_dlmopen(), lmid, ldshim_caller_behind(return_address), file, mode, handle);
}

#if LDSHIM_HAVE_DLOPEN_ENTRY
LDSHIM_DLMOPEN_ENTRY(dlmopen, ldshim_preload_dlmopen_decide, 0);
#else
__attribute__((visibility("default"))) void* dlmopen(long lmid, const char* file, int mode) {
    void* handle = nullptr;
    ldshim_dlmopen_fn go_on = ldshim_preload_dlmopen_decide(__builtin_return_address(0), lmid, file, mode, &handle);
    return go_on ? go_on(lmid, file, mode) : handle;
}
#endif

__attribute__((visibility("default"))) char* dlerror(void) { return ldshim_dlerror_via(next_dlerror()); }

// UCX's ucm, in reloc mode, writes the address of its exported ucm_dlopen
// into every object's dlopen GOT slot.  libucm takes that address through a
// symbolic relocation, so with this library preloaded it is this function
// that lands in the slots, called with the return address of the real
// caller.  It resolves from there and hands libucm's own ucm_dlopen the
// path, so ucm still sees (and patches) every new library.
__attribute__((visibility("default"))) void* ucm_dlopen(const char* file, int mode) {
    return ldshim_dlopen_via(ucm_next, __builtin_return_address(0), file, mode);
}

// glibc starts the program through this after every library's constructor
// has run: the first moment at which every other preload has written what
// it writes.  ldshim looks at every dlopen slot again then (a full pass), so
// a GOT patcher whose constructor ran after ldshim's is put behind ldshim
// before main makes its first call.  The compat and current versions of the
// symbol are one function in glibc 2.34 and later.
using start_fn = int (*)(int (*)(int, char**, char**), int, char**, void (*)(), void (*)(), void (*)(), void*);
__attribute__((visibility("default"))) int __libc_start_main(int (*main)(int, char**, char**), int argc, char** argv,
                                                             void (*init)(), void (*fini)(), void (*rtld_fini)(),
                                                             void* stack_end) {
    auto real = reinterpret_cast<start_fn>(dlsym(RTLD_NEXT, "__libc_start_main"));
    if (!real) real = reinterpret_cast<start_fn>(dlvsym(RTLD_NEXT, "__libc_start_main", "GLIBC_2.34"));
    if (real) ldshim_hooks_install(LDSHIM_HOOK_DLOPEN);
    if (!real) _exit(127);  // no libc to start the program with: nothing could run it
    return real(main, argc, argv, init, fini, rtld_fini, stack_end);
}

}  // extern "C"
