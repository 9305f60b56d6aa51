// What the compiler's start files gave libldshim.so, without them
// (-nostartfiles, lib/meson.build).  crtbeginS.o references __gmon_start__,
// _ITM_registerTMCloneTable and _ITM_deregisterTMCloneTable weakly, and
// __cxa_finalize through the GOT: each is one more symbol the loader looks up
// through every object of every process the preload is in, three of them in
// vain.  crti.o's _init and crtn.o's _fini add a DT_INIT the loader calls,
// at the far end of the text from the start-up code.  libldshim needs only
// two of their pieces.
#include "host/libc.h"

#include <cxxabi.h>

extern "C" {

// The object's handle: __cxa_atexit and __cxa_thread_atexit_impl register
// libldshim's static and thread-local destructors under it.
[[gnu::visibility("hidden")]] void* __dso_handle = &__dso_handle;

}  // extern "C"

namespace {

// When libldshim is unloaded (dlclose), its destructors still registered
// run and its fork handlers go, before its code is unmapped: glibc's
// __cxa_finalize does both for a handle.  Priority 101 puts this first in
// .fini_array, which runs last to first: after every other destructor, as
// crtbeginS.o's entry did.  At exit the handlers have run already and
// this finds nothing to do.  glibc's own __cxa_finalize, from libc's table
// (host/libc.h): the import is one more lookup through every loaded object
// at every exit, and is called only where libc's table cannot be read.
[[gnu::destructor(101)]] void finalize() {
    using finalize_fn = void (*)(void*);
    if (auto f = reinterpret_cast<finalize_fn>(ldshim::host::libc_symbol("__cxa_finalize")))
        f(&__dso_handle);
    else
        __cxxabiv1::__cxa_finalize(&__dso_handle);
}

}  // namespace
