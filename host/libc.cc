#include "host/libc.h"

#include "host/loaded_objects.h"

#include <dlfcn.h>
#include <gnu/lib-names.h>

#include <pthread.h>

#include <atomic>

namespace ldshim::host {

namespace {

// glibc's own functions, from libc's handle: a plain call to dlopen from
// here would bind to the first definition in the process (the preload's),
// and RTLD_NEXT finds nothing when libc comes before libldshim in scope.
// The handle itself comes from whatever "dlopen" binds to (the preload's,
// which asks ldshim, which may ask here again): that nested lookup answers
// null instead of recursing, and the outer one fills the cache.
[[gnu::tls_model("initial-exec")]] thread_local bool t_finding_libc = false;

// Before glibc 2.34 the dl* functions live in libdl, not libc.
template <class Fn>
Fn libc_function(std::atomic<Fn>& cache, const char* name) {
    Fn f = cache.load(std::memory_order_acquire);
    if (f || t_finding_libc) return f;
    t_finding_libc = true;
    for (const char* object : {LIBC_SO, LIBDL_SO}) {
        if (void* h = dlopen(object, RTLD_LAZY | RTLD_NOLOAD)) {
            f = reinterpret_cast<Fn>(dlsym(h, name));
            dlclose(h);
        }
        if (f) break;
    }
    t_finding_libc = false;
    if (f) cache.store(f, std::memory_order_release);
    return f;
}
using dlopen_fn = void* (*)(const char*, int);
std::atomic<dlopen_fn> g_libc_dlopen{nullptr};
std::atomic<dlmopen_fn> g_libc_dlmopen{nullptr};
std::atomic<dlerror_fn> g_libc_dlerror{nullptr};
using iterate_fn = int (*)(int (*)(dl_phdr_info*, std::size_t, void*), void*);
std::atomic<iterate_fn> g_libc_iterate{nullptr};

}  // namespace

void find_libc_functions() {
    libc_function(g_libc_dlopen, "dlopen");
    libc_function(g_libc_dlmopen, "dlmopen");
    libc_function(g_libc_dlerror, "dlerror");
    libc_function(g_libc_iterate, "dl_iterate_phdr");
}

void* libc_dlopen(const char* file, int mode) {
    dlopen_fn f = libc_function(g_libc_dlopen, "dlopen");
    return f ? f(file, mode) : nullptr;
}

int libc_dl_iterate_phdr(int (*callback)(dl_phdr_info*, std::size_t, void*), void* data) {
    iterate_fn f = libc_function(g_libc_iterate, "dl_iterate_phdr");
    return f ? f(callback, data) : dl_iterate_phdr(callback, data);
}

dlmopen_fn libc_dlmopen_function() { return libc_function(g_libc_dlmopen, "dlmopen"); }
dlerror_fn libc_dlerror_function() { return libc_function(g_libc_dlerror, "dlerror"); }

namespace {

// struct rtld_global of glibc 2.36 on x86-64: 16 link_namespaces of 160
// bytes, then _dl_nns, then three recursive locks (pthread_mutex_t) --
// _dl_load_lock, _dl_load_write_lock, _dl_load_tls_lock -- then
// _dl_load_adds.  _ns_nloaded follows _ns_loaded in each namespace.
constexpr std::size_t kNamespaces = 16, kNamespaceSize = 160;
constexpr std::size_t kNnsOffset = kNamespaces * kNamespaceSize;
constexpr std::size_t kWriteLockOffset = kNnsOffset + sizeof(std::size_t) + sizeof(pthread_mutex_t);
constexpr std::size_t kAddsOffset = kNnsOffset + sizeof(std::size_t) + 3 * sizeof(pthread_mutex_t);
constexpr std::size_t kNloadedOffset = sizeof(void*);

}  // namespace

LoaderWords loader_words() {
    LoaderWords w;
    void* g = dlvsym(RTLD_DEFAULT, "_rtld_global", "GLIBC_PRIVATE");
    Dl_info info;
    void* entry = nullptr;
    if (!g || !dladdr1(g, &info, &entry, RTLD_DL_SYMENT) || !entry ||
        static_cast<const ElfW(Sym)*>(entry)->st_size < kAddsOffset + sizeof(unsigned long long))
        return w;
    const auto* base = static_cast<const unsigned char*>(g);
    w.adds = reinterpret_cast<const unsigned long long*>(base + kAddsOffset);
    w.nloaded = reinterpret_cast<const unsigned int*>(base + kNloadedOffset);
    w.write_lock = reinterpret_cast<const int*>(base + kWriteLockOffset);
    w.nns = reinterpret_cast<const std::size_t*>(base + kNnsOffset);
    return w;
}

LoadCounters load_counters() {
    LoadCounters c;
    for_each_loaded([&](const dl_phdr_info&, const LoadCounters& now) {
        c = now;
        return false;  // the first object is enough
    });
    return c;
}

}  // namespace ldshim::host
