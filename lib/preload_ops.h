// What libldshim.so.0 offers its own preload, libldshim_preload.so, and
// nobody else: one function, exported in the private version node
// LDSHIM_PRIVATE, whose table holds everything the preload calls.  Every
// import of a preloaded library is looked up through every object of the
// process, the program's hundreds of libraries first, before libldshim or
// libc answers it: one import instead of a dozen, and no libc import at all
// (no DT_NEEDED libc.so.6, no start files), is most of what a process that
// never calls dlopen pays for the preload (docs/performance.md).  The
// preload names no version for it (lib/preload_link_stub.c): a version
// requirement is one more walk of every object by name.
// The table only grows; `size` says how much of it this library fills, and
// a preload that finds fewer fields than it knows passes every call through
// (the size and the two dlsym fields come first in every release).
#pragma once

#include "ldshim.h"

#include <cstddef>

extern "C" {

using ldshim_dlsym_fn = void* (*)(void* handle, const char* name);
using ldshim_dlvsym_fn = void* (*)(void* handle, const char* name, const char* version);
using ldshim_start_main_fn = int (*)(int (*)(int, char**, char**), int, char**, void (*)(), void (*)(), void (*)(),
                                     void*);

struct ldshim_preload_ops {
    std::size_t size;  // sizeof the table this library fills
    // glibc's own dlsym and dlvsym (null if libc cannot be found), for the
    // preload to call itself: RTLD_NEXT then means the next definition
    // after the preload.
    ldshim_dlsym_fn (*dlsym)();
    ldshim_dlvsym_fn (*dlvsym)();
    // The constructor's work: the dlopen hooks (and the CUDA ones with
    // LDSHIM_CUDA_HOOKS=1; LDSHIM_HOOKS_LOG=FILE), reading the environment.
    void (*start)();
    // Before main: a full pass again, then `real` (glibc's), or exit 127
    // where there is none.
    int (*start_main)(ldshim_start_main_fn real, int (*main)(int, char**, char**), int argc, char** argv,
                      void (*init)(), void (*fini)(), void (*rtld_fini)(), void* stack_end);
    // The C API's own (ldshim.h).
    const void* (*caller_behind)(const void* return_address);
    ldshim_dlopen_fn (*dlopen_decide)(ldshim_dlopen_fn next, const void* caller, const char* file, int mode,
                                      void** handle);
    ldshim_dlmopen_fn (*dlmopen_decide)(ldshim_dlmopen_fn next, long lmid, const void* caller, const char* file,
                                        int mode, void** handle);
    char* (*dlerror_via)(char* (*next)(void));
    void* (*dlopen_via)(ldshim_dlopen_fn next, const void* caller, const char* file, int mode);
    // What the preload's ucm_dlopen goes on to: libucm's own ucm_dlopen,
    // handed an absolute path, or `next_dlopen` without UCX.
    void* (*ucm_next)(ldshim_dlopen_fn next_dlopen, const char* file, int mode);
    // glibc's own definition of `name` (dlerror, __libc_start_main: the ones
    // looked up at every start-up) where that is what RTLD_NEXT from the
    // preload finds (hooks/patcher.h: libc_next), else null: then the
    // preload asks dlsym, a lookup through every loaded object.
    void* (*libc_next)(const char* name);
};

[[gnu::visibility("default")]] const ldshim_preload_ops* ldshim_get_preload_ops(void);
}
