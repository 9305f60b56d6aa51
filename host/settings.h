// ldshim's own switches, read once from the environment when libldshim is
// loaded: before any constructor of a library that depends on it (the
// preload's included), so their calls find them ready.  Ignored in secure
// mode, like LD_DEBUG.
#pragma once

namespace ldshim::host {

struct Settings {
    bool disabled;          // LDSHIM_DISABLE: pass every call through, write no hook
    bool debug;             // LDSHIM_DEBUG: one line per decision on stderr
    bool cuda_hooks;        // LDSHIM_CUDA_HOOKS: the preload installs the CUDA hooks too
    const char* hooks_log;  // LDSHIM_HOOKS_LOG: the file the preload writes the hooks' log to at exit
};

// All false until read, and in secure mode.
const Settings& settings();
// Whether the settings (and glibc's own functions, host/libc.h) have been read.
bool settings_ready();
// The environment libldshim was loaded with, as glibc hands it to
// constructors: for a library loaded at start-up, the block ld.so read
// (LD_LIBRARY_PATH, GLIBC_TUNABLES), whatever setenv did since.  Null until
// then.  (A reference to `environ` would be one more symbol looked up
// through every loaded object at every start-up.)
char* const* loaded_environment();

}  // namespace ldshim::host
