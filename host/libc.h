// glibc's own loader functions, whatever else in the process defines the
// names, and the load counters.  An interposer's dlopen is exactly what
// ldshim must get behind; a path translator (fakechroot) wraps
// dl_iterate_phdr too, and its wrapper crashes when called before its
// constructor -- which ldshim's start-up pass can be.
#pragma once

#include <link.h>

#include <cstddef>

namespace ldshim::host {

// Looks them all up now (from a constructor): looked up later, inside
// dlerror(), the lookup itself would clear the error being asked for.
void find_libc_functions();

void* libc_dlopen(const char* file, int mode);
int libc_dl_iterate_phdr(int (*callback)(dl_phdr_info*, std::size_t, void*), void* data);
using dlmopen_fn = void* (*)(long, const char*, int);
using dlerror_fn = char* (*)();
dlmopen_fn libc_dlmopen_function();  // nullptr if libc cannot be found
dlerror_fn libc_dlerror_function();

// dl_iterate_phdr's add and sub counters: they move whenever an object is
// loaded or unloaded.  (The first callback has them; one step of the walk.)
struct LoadCounters {
    unsigned long long adds = 0, subs = 0;
    bool operator==(const LoadCounters&) const = default;
};
LoadCounters load_counters();

}  // namespace ldshim::host
