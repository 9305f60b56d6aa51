/* The Julia + UCX report in miniature, for the installed
 * libldshim_preload.so (scripts/package-test.sh builds and runs it):
 *   lib/libhost.so     like libjulia: DT_RPATH $ORIGIN/sub, and host_load()
 *                      dlopens a library by bare name
 *   lib/sub/libplug.so like libopenlibm: reachable only through that RPATH
 *   lib/libucm.so.0    like UCX's ucm in reloc mode: at load it writes the
 *                      address of its exported ucm_dlopen into every dlopen
 *                      GOT slot, and ucm_dlopen calls the real dlopen from
 *                      its own code -- so glibc searches from libucm, whose
 *                      search never sees $ORIGIN/sub
 *   bin/prog           links both, loads libplug.so through libhost
 *   lib/libwrap.so     a dlsym(RTLD_NEXT) wrapper, preloaded (a tracer's or a
 *                      path translator's dlopen): the call glibc sees comes
 *                      from libwrap, whose search has no $ORIGIN/sub either
 * Without ldshim prog fails; with LD_PRELOAD=libldshim_preload.so the slots
 * get the preload's ucm_dlopen (the address is taken through a symbolic
 * relocation), which resolves from the real caller and hands libucm's
 * ucm_dlopen the full path.  UCM_LIKE_OFF=1 skips the patching: plain glibc.
 * UCM_LIKE_LDSHIM=1 makes ucm_dlopen the patched libucm's (contrib/ucx/):
 * it loads libldshim.so.0 by name and asks ldshim_dlopen_try first.
 * One file, one part per -DPART_*; build with -O0 so that no call to dlopen
 * becomes a tail call (the return address must stay inside the caller). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>

#if defined(PART_PLUG)
int plug_answer(void) { return 42; }

#elif defined(PART_HOST)
static int loads;
void* host_load(const char* name) {
    void* h = dlopen(name, RTLD_NOW);
    ++loads; /* work after the call: never a tail call */
    return h;
}

#elif defined(PART_UCM)
#include "../resolver/fixtures/got_patch.h"

static void* (*real_dlopen)(const char*, int);

/* UCM_LIKE_LDSHIM=1: what UCX's patched libucm does (contrib/ucx/): load
 * libldshim.so.0 by name with the real dlopen and ask ldshim_dlopen_try
 * first, from its caller; its own dlopen only when that has no answer. */
typedef int (*ldshim_try_fn)(void* (*)(const char*, int), const void*, const char*, int, void**);

static ldshim_try_fn ldshim_try(void) {
    static ldshim_try_fn fn;
    static int checked;
    const char* on = getenv("UCM_LIKE_LDSHIM");
    if (!on || *on != '1') return NULL;
    if (!checked) {
        checked = 1;
        void* h = real_dlopen("libldshim.so.0", RTLD_NOW | RTLD_LOCAL);
        fn = h ? (ldshim_try_fn)dlsym(h, "ldshim_dlopen_try") : NULL;
        if (!fn) printf("ucm-like: libldshim.so.0 not loaded: %s\n", dlerror());
    }
    return fn;
}

void* ucm_dlopen(const char* file, int mode) {
    /* What ucm does: its own bookkeeping, then the real dlopen from here. */
    printf("ucm-like: ucm_dlopen(\"%s\")\n", file ? file : "(null)");
    fflush(stdout);
    ldshim_try_fn try_ = ldshim_try();
    void* handle = NULL;
    if (try_ && try_(real_dlopen, __builtin_return_address(0), file, mode, &handle) == 0) return handle;
    return real_dlopen(file, mode);
}

__attribute__((constructor)) static void ucm_install(void) {
    real_dlopen = (void* (*)(const char*, int))dlsym(RTLD_NEXT, "dlopen");
    const char* off = getenv("UCM_LIKE_OFF");
    if (off && *off == '1') return;
    got_patch_all("dlopen", (void*)ucm_dlopen, NULL, (const void*)ucm_install);
}

#elif defined(PART_PROG)
void* host_load(const char* name);

int main(void) {
    void* h = host_load("libplug.so");
    if (!h) {
        printf("prog: libplug.so not loaded: %s\n", dlerror());
        return 1;
    }
    struct link_map* map = NULL;
    int (*answer)(void) = (int (*)(void))dlsym(h, "plug_answer");
    if (dlinfo(h, RTLD_DI_LINKMAP, &map) != 0 || !answer) {
        printf("prog: libplug.so loaded but unusable: %s\n", dlerror());
        return 1;
    }
    printf("prog: loaded %s, plug_answer() = %d\n", map->l_name, answer());
    return answer() == 42 ? 0 : 1;
}

#elif defined(PART_WRAP)
static void* (*next_dlopen)(const char*, int);
static int calls;

void* dlopen(const char* file, int mode) {
    if (!next_dlopen) next_dlopen = (void* (*)(const char*, int))dlsym(RTLD_NEXT, "dlopen");
    void* h = next_dlopen(file, mode);
    ++calls; /* work after the call: never a tail call */
    return h;
}

#else
#error "build with one of -DPART_PLUG, -DPART_HOST, -DPART_UCM, -DPART_PROG, -DPART_WRAP"
#endif
