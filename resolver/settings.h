// The runtime resolver's settings and glibc's own dlopen, for the other
// modules of libldshim (the hooks engine honours LDSHIM_DISABLE too).
#pragma once

namespace ldshim::resolver {

struct Settings {
    bool disabled;  // LDSHIM_DISABLE: pass every call through, write no hook
    bool debug;     // LDSHIM_DEBUG: one line per decision on stderr
};

// Read once, before main (or when libldshim is loaded); all false until then
// and in secure mode.
const Settings& settings();

// glibc's dlopen itself, whatever else in the process defines "dlopen".
void* libc_dlopen(const char* file, int mode);

}  // namespace ldshim::resolver
