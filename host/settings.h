// ldshim's own switches, read once from the environment when libldshim is
// loaded: before any constructor of a library that depends on it (the
// preload's included), so their calls find them ready.  Ignored in secure
// mode, like LD_DEBUG.
#pragma once

namespace ldshim::host {

struct Settings {
    bool disabled;  // LDSHIM_DISABLE: pass every call through, write no hook
    bool debug;     // LDSHIM_DEBUG: one line per decision on stderr
};

// All false until read, and in secure mode.
const Settings& settings();
// Whether the settings (and glibc's own functions, host/libc.h) have been read.
bool settings_ready();

}  // namespace ldshim::host
