// The runtime resolver's settings and glibc's own dlopen, for the other
// modules of libldshim (the hooks engine honours LDSHIM_DISABLE too).
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

// glibc's own functions, whatever else in the process defines the names: a
// path translator (fakechroot) interposes dl_iterate_phdr too, and its
// wrapper crashes when called before its constructor -- which ldshim's
// start-up pass can be.  Every walk of the loaded objects goes through here.
void* libc_dlopen(const char* file, int mode);
int libc_dl_iterate_phdr(int (*callback)(dl_phdr_info*, std::size_t, void*), void* data);

// dl_iterate_phdr's add and sub counters: they move whenever an object is
// loaded or unloaded.  (The first callback has them; one step of the walk.)
struct LoadCounters {
    unsigned long long adds = 0, subs = 0;
    bool operator==(const LoadCounters&) const = default;
};
LoadCounters load_counters();

}  // namespace ldshim::resolver
