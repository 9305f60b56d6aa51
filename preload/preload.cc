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
// It imports one function, libldshim's private ldshim_get_preload_ops, and
// nothing from libc, and has no start files: each import of a preloaded
// library is looked up through every object of the process
// (lib/preload_ops.h).  What it does lives there; what must run in this
// object stays here: the entries, and the RTLD_NEXT lookups.
// Its own variables (ignored in secure mode; LDSHIM_DISABLE and LDSHIM_DEBUG
// are libldshim's):
//   LDSHIM_CUDA_HOOKS=1  install the CUDA hooks too, before main
//   LDSHIM_HOOKS_LOG=F   at exit, write the hooks' operation log to file F
#include "lib/preload_ops.h"
#include "resolver/dlopen_entry.h"

#include <dlfcn.h>

#include <atomic>

namespace {

using dlerror_fn = char* (*)();

const ldshim_preload_ops& ops() { return *ldshim_get_preload_ops(); }
// The whole table, or null from a libldshim.so.0 of an older release that
// lacks fields this preload uses (the program links another install's
// library, already loaded under the same name): then every call passes
// through to the next definition.  The size and the two dlsym fields are
// in every release.
const ldshim_preload_ops* whole() {
    const ldshim_preload_ops& o = ops();
    return o.size >= sizeof(ldshim_preload_ops) ? &o : nullptr;
}

// The next definitions in symbol order, looked up on first use: glibc's own
// where libldshim's pass saw nothing else that may define the name, else
// with glibc's own dlsym called from here.  Idempotent, so a race or a call
// from inside another tool's start-up only repeats the lookup.  (No
// function-local statics: their guards abort on recursion.)
std::atomic<ldshim_dlopen_fn> g_next_dlopen{nullptr};
std::atomic<ldshim_dlmopen_fn> g_next_dlmopen{nullptr};
std::atomic<dlerror_fn> g_next_dlerror{nullptr};

template <class Fn>
Fn next_symbol(std::atomic<Fn>& slot, const char* name) {
    Fn f = slot.load(std::memory_order_acquire);
    if (f) return f;
    if (const ldshim_preload_ops* o = whole()) f = reinterpret_cast<Fn>(o->libc_next(name));
    if (!f) {
        ldshim_dlsym_fn dlsym = ops().dlsym();
        f = dlsym ? reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name)) : nullptr;
    }
    if (f) slot.store(f, std::memory_order_release);
    return f;
}
ldshim_dlopen_fn next_dlopen() { return next_symbol(g_next_dlopen, "dlopen"); }
ldshim_dlmopen_fn next_dlmopen() { return next_symbol(g_next_dlmopen, "dlmopen"); }
dlerror_fn next_dlerror() { return next_symbol(g_next_dlerror, "dlerror"); }

// Where a ucm_dlopen call goes on to, once resolved.
void* ucm_next(const char* file, int mode) { return ops().ucm_next(next_dlopen(), file, mode); }

// Lets libldshim put ldshim in front of every dlopen slot, then looks the
// next dlerror up before main: dlsym() clears the pending dlerror() state,
// so it must not run for the first time inside dlerror().  (dlopen and
// dlmopen clear it themselves, so theirs are looked up at their first call:
// a process that never calls them never pays for the lookups.)
[[gnu::constructor]] void start() {
    if (const ldshim_preload_ops* o = whole()) o->start();
    next_dlerror();
}

}  // namespace

extern "C" {

// dlopen, reached by symbol: through dlsym, a saved pointer, or another
// tool's wrapper forwarding with RTLD_NEXT -- then the caller is behind that
// tool.  The entry is resolver/dlopen_entry.h's recipe around this, so a call
// ldshim does not answer reaches the next dlopen from its own caller.
[[gnu::visibility("hidden")]] ldshim_dlopen_fn ldshim_preload_dlopen_decide(const void* return_address,
                                                                            const char* file, int mode, void** handle) {
    const ldshim_preload_ops* o = whole();
    if (!o) return next_dlopen();
    return o->dlopen_decide(next_dlopen(), o->caller_behind(return_address), file, mode, handle);
}

LDSHIM_DLOPEN_ENTRY(dlopen, ldshim_preload_dlopen_decide, 0);

[[gnu::visibility("hidden")]] ldshim_dlmopen_fn ldshim_preload_dlmopen_decide(const void* return_address, long lmid,
                                                                              const char* file, int mode,
                                                                              void** handle) {
    const ldshim_preload_ops* o = whole();
    if (!o) return next_dlmopen();
    return o->dlmopen_decide(next_dlmopen(), lmid, o->caller_behind(return_address), file, mode, handle);
}

LDSHIM_DLMOPEN_ENTRY(dlmopen, ldshim_preload_dlmopen_decide, 0);

__attribute__((visibility("default"))) char* dlerror(void) {
    if (const ldshim_preload_ops* o = whole()) return o->dlerror_via(next_dlerror());
    dlerror_fn next = next_dlerror();
    return next ? next() : nullptr;
}

// UCX's ucm, in reloc mode, writes the address of its exported ucm_dlopen
// into every object's dlopen GOT slot.  libucm takes that address through a
// symbolic relocation, so with this library preloaded it is this function
// that lands in the slots, called with the return address of the real
// caller.  It resolves from there and hands libucm's own ucm_dlopen the
// path, so ucm still sees (and patches) every new library.
__attribute__((visibility("default"))) void* ucm_dlopen(const char* file, int mode) {
    if (const ldshim_preload_ops* o = whole()) return o->dlopen_via(ucm_next, __builtin_return_address(0), file, mode);
    ldshim_dlopen_fn next = next_dlopen();
    return next ? next(file, mode) : nullptr;
}

// glibc starts the program through this after every library's constructor
// has run; libldshim makes a full pass then (lib/preload_ops.cc).  The
// compat and current versions of the symbol are one function in glibc 2.34
// and later.
__attribute__((visibility("default"))) int __libc_start_main(int (*main)(int, char**, char**), int argc, char** argv,
                                                             void (*init)(), void (*fini)(), void (*rtld_fini)(),
                                                             void* stack_end) {
    const ldshim_preload_ops& o = ops();
    const ldshim_preload_ops* whole_table = whole();
    auto real =
        whole_table ? reinterpret_cast<ldshim_start_main_fn>(whole_table->libc_next("__libc_start_main")) : nullptr;
    ldshim_dlsym_fn dlsym = real ? nullptr : o.dlsym();
    if (dlsym) real = reinterpret_cast<ldshim_start_main_fn>(dlsym(RTLD_NEXT, "__libc_start_main"));
    ldshim_dlvsym_fn dlvsym = real ? nullptr : o.dlvsym();
    if (dlvsym) real = reinterpret_cast<ldshim_start_main_fn>(dlvsym(RTLD_NEXT, "__libc_start_main", "GLIBC_2.34"));
    if (whole_table) return whole_table->start_main(real, main, argc, argv, init, fini, rtld_fini, stack_end);
    if (!real) __builtin_trap();  // no libc to start the program with, and no libldshim to say so
    return real(main, argc, argv, init, fini, rtld_fini, stack_end);
}

}  // extern "C"
