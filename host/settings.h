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
    bool no_return_points;  // LDSHIM_RETURN_POINTS=0: call nothing from a return point in another object,
                            // as under a shadow stack (hooks/as_caller.h), so that its fallbacks can be tried
};

// All false until read, and in secure mode.
const Settings& settings();
// Whether the settings (and glibc's own functions, host/libc.h) have been read.
bool settings_ready();
// The first of the environment strings the kernel placed at start-up, when
// glibc handed libldshim's constructor the start-up array (loaded at
// start-up, or dlopen'ed while `environ` was still that array); else null.
// Read by host/startup_env.h, where /proc/self/environ cannot be.  Nothing
// is copied here: the constructor is on every start-up's path.
const char* startup_env_strings();

}  // namespace ldshim::host
