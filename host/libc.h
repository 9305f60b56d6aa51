// glibc's own loader functions, whatever else in the process defines the
// names, and the load counters.  An interposer's dlopen is exactly what
// ldshim must get behind; a path translator (fakechroot) wraps
// dl_iterate_phdr too, and its wrapper crashes when called before its
// constructor -- which ldshim's start-up pass can be.
#pragma once

#include <link.h>

#include <cstddef>
#include <cstdint>
#include <span>

namespace ldshim::host {

// Looks them all up now (from a constructor): looked up later, inside
// dlerror(), the lookup itself would clear the error being asked for.
void find_libc_functions();

void* libc_dlopen(const char* file, int mode);
using dlopen_fn = void* (*)(const char*, int);
dlopen_fn libc_dlopen_function();  // glibc's own dlopen, nullptr if libc cannot be found
int libc_dl_iterate_phdr(int (*callback)(dl_phdr_info*, std::size_t, void*), void* data);
using dlmopen_fn = void* (*)(long, const char*, int);
using dlerror_fn = char* (*)();
dlmopen_fn libc_dlmopen_function();  // nullptr if libc cannot be found
dlerror_fn libc_dlerror_function();
using dlsym_fn = void* (*)(void*, const char*);
using dlvsym_fn = void* (*)(void*, const char*, const char*);
dlsym_fn libc_dlsym_function();  // nullptr if libc cannot be found
dlvsym_fn libc_dlvsym_function();

// Read from the loaded objects' own symbol tables (DT_GNU_HASH), without a
// lock, an allocation or a walk of the loaded objects, with glibc 2.35 and
// later (_dl_find_object); before, and where an object has no such table
// or it looks wrong, they cannot tell, and the caller asks glibc.
// The function libc defines as `name`, as dlsym(libc's handle, name) finds
// it, or nullptr.
void* libc_symbol(const char* name);
// libc's load address (its link map's l_addr) where libc_symbol can read its
// table, else 0.
std::uintptr_t libc_load_address();
// Whether the object that holds `addr` exports a function `name` at exactly
// that address (in any version), as its hash table says: then dladdr would
// name it too.  False says nothing: dladdr also names the canonical PLT entry
// of a function that a non-PIE program takes the address of (an undefined
// symbol with a value, which no hash table lists), so the caller asks dladdr.
bool exported_at(const void* addr, const char* name);

// dl_iterate_phdr's add and sub counters: they move whenever an object is
// loaded or unloaded.  (The first callback has them; one step of the walk.)
struct LoadCounters {
    unsigned long long adds = 0, subs = 0;
    bool operator==(const LoadCounters&) const = default;
};
LoadCounters load_counters();

// The loader's own bookkeeping, read without its lock and without a walk:
// GL(dl_load_adds) (every object added to any namespace), the number of
// objects in namespace 0 (GL(dl_ns)[0]._ns_nloaded: dlpi_subs is adds minus
// the objects of all namespaces) and the lock dl_iterate_phdr takes
// (GL(dl_load_write_lock)), which glibc holds while it changes either.
// They live in ld.so's _rtld_global (GLIBC_PRIVATE), at glibc 2.36
// x86-64's layout; nothing here trusts that layout: the resolver compares
// these words with what a walk reports, under the loader's lock, before it
// relies on them (resolver/live_process.cc).  All null where the symbol is
// missing or too small.
struct LoaderWords {
    const unsigned long long* adds = nullptr;
    const unsigned int* nloaded = nullptr;  // namespace 0
    const int* write_lock = nullptr;        // the mutex's lock word: nonzero while held
    const std::size_t* nns = nullptr;       // GL(dl_nns): namespaces in use
    explicit operator bool() const { return adds != nullptr; }
};
// Looks them up (dlvsym takes the loader's lock: never from inside a walk);
// the caller keeps the answer.
LoaderWords loader_words();

// ld.so's _rtld_global (GLIBC_PRIVATE): where it is and its size, from its
// symbol; empty where the symbol is missing.
std::span<const unsigned char> rtld_global();

}  // namespace ldshim::host
