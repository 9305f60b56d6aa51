// The runtime resolver's settings, for the other modules of libldshim (the
// hooks patcher honours LDSHIM_DISABLE too).
#pragma once

#include <link.h>

#include <cstddef>

namespace ldshim::resolver {

struct Settings {
    bool disabled;  // LDSHIM_DISABLE: pass every call through, write no hook
    bool debug;     // LDSHIM_DEBUG: one line per decision on stderr
};

// Read once, before main (or when libldshim is loaded); all false until then
// and in secure mode.
const Settings& settings();
// Whether the settings (and glibc's own functions) have been read.
bool settings_ready();

}  // namespace ldshim::resolver
