/* The loader probe's helper (host/loader_probe.cc says what the probe
 * learns).  ldshim opens it by path; its DT_RPATH names its own directory
 * first, so a bare name it asks glibc for is searched there, in every
 * subdirectory that loader tries, and found in the first one that holds it.
 * The marker elements after it are never searched (the names asked for are
 * always found before them); glibc expands them, and RTLD_DI_SERINFO of this
 * object shows the expansions: the loader's own $PLATFORM and $LIB. */
#include <dlfcn.h>
#include <link.h>
#include <string.h>

typedef void* (*ldshim_probe_dlopen_fn)(const char*, int);

/* Opens `name` through `open_fn` (glibc's own dlopen, passed in so that no
 * interposer stands between: this object is the caller glibc sees), copies
 * the path glibc loaded it from into out[size], and closes it again.
 * Returns 0, or -1 when glibc did not find it or the path does not fit. */
__attribute__((visibility("default"))) int ldshim_probe_search(ldshim_probe_dlopen_fn open_fn, const char* name,
                                                               char* out, size_t size) {
    void* h = open_fn(name, RTLD_LAZY | RTLD_LOCAL);
    if (!h) return -1;
    struct link_map* map = NULL;
    int rc = -1;
    if (dlinfo(h, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && strlen(map->l_name) < size) {
        strcpy(out, map->l_name);
        rc = 0;
    }
    dlclose(h);
    return rc;
}
