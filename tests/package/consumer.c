/* A C99 program built against the installed libldshim-dev, the way a user
 * would: cc -std=c99 -pedantic-errors consumer.c $(pkg-config --cflags --libs
 * ldshim).  It checks that the header, the pkg-config file and
 * libldshim.so.0 agree, and that the resolver answers as glibc does.
 * Prints one line per check; exits non-zero on the first failure. */
#define _POSIX_C_SOURCE 200809L
#include <ldshim.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

static void check(int ok, const char* what) {
    printf("consumer: %s: %s\n", ok ? "ok" : "FAILED", what);
    if (!ok) ++failures;
}

/* An address inside the main program: the "caller" for ldshim_resolve. */
static int anchor;

int main(void) {
    char path[4096];
    const char* text = ldshim_strerror(LDSHIM_ERR_NOT_FOUND);
    check(text != NULL && *text != '\0', "ldshim_strerror(LDSHIM_ERR_NOT_FOUND) has text");
    check(strcmp(ldshim_strerror(12345), "unknown ldshim status") == 0, "ldshim_strerror of an unknown code");
    printf("consumer: ldshim_version() = %s\n", ldshim_version());
#ifdef LDSHIM_VERSION_STRING
    /* The generated header and the installed library come from one build. */
    check(strcmp(ldshim_version(), LDSHIM_VERSION_STRING) == 0, "ldshim_version() matches LDSHIM_VERSION_STRING");
#endif

    /* libm is not loaded yet: the search must find it where dlopen will. */
    int rc = ldshim_resolve(&anchor, "libm.so.6", RTLD_NOW, path, sizeof path);
    printf("consumer: ldshim_resolve(\"libm.so.6\") = %d (%s) %s\n", rc, ldshim_strerror(rc),
           rc == LDSHIM_OK ? path : "");
    check(rc == LDSHIM_OK && strstr(path, "/libm.so.6") != NULL, "ldshim_resolve finds libm.so.6");

    void* h = ldshim_dlopen("libm.so.6", RTLD_NOW);
    check(h != NULL, "ldshim_dlopen(\"libm.so.6\")");
    if (h) {
        /* The same object glibc has now loaded, not a second copy. */
        void* same = dlopen("libm.so.6", RTLD_NOW | RTLD_NOLOAD);
        check(same == h, "ldshim_dlopen returned glibc's handle for libm.so.6");
        if (same) dlclose(same);
        dlclose(h);
    }

    rc = ldshim_resolve(&anchor, "libldshim-no-such-library.so.9", RTLD_NOW, path, sizeof path);
    const char* err = ldshim_dlerror();
    printf("consumer: missing library: %d (%s): %s\n", rc, ldshim_strerror(rc), err ? err : "(no dlerror)");
    check(rc == LDSHIM_ERR_NOT_FOUND && err && strstr(err, "cannot open shared object file"),
          "a missing library is LDSHIM_ERR_NOT_FOUND with glibc's text");

    static char buffer[256];
    ldshim_meminfo_t info;
    check(ldshim_memtype_insert(buffer, sizeof buffer, LDSHIM_MEM_HOST_PINNED, -1) == LDSHIM_OK &&
              ldshim_memtype_query(buffer + 8, 16, &info) == LDSHIM_OK && info.type == LDSHIM_MEM_HOST_PINNED,
          "memtype registry: insert then query");

    if (failures) {
        fprintf(stderr, "consumer: %d check(s) failed\n", failures);
        return EXIT_FAILURE;
    }
    puts("consumer: all checks passed");
    return EXIT_SUCCESS;
}
