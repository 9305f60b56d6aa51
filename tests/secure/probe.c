/* Installed set-user-ID root by the secure test and run as nobody: for each
 * NAME, what ldshim's resolver says dlopen(NAME) from the program would do,
 * then what the real dlopen does.  Both must agree in secure mode.
 * "?NAME" asks ldshim only (for files that make glibc itself crash). */
#define _GNU_SOURCE
#include "ldshim.h"

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <sys/auxv.h>
#include <unistd.h>

int main(int argc, char** argv) {
    printf("secure %lu euid %d\n", getauxval(AT_SECURE), (int)geteuid());
    for (int i = 1; i < argc; ++i) {
        char path[4096];
        int only_ldshim = argv[i][0] == '?';
        const char* name = argv[i] + only_ldshim;
        int rc = ldshim_resolve((const void*)main, name, RTLD_NOW, path, sizeof path);
        if (rc == LDSHIM_OK || rc == LDSHIM_ALREADY_LOADED)
            printf("ldshim %s %s\n", name, path);
        else
            printf("ldshim %s not-found\n", name);
        fflush(stdout);
        if (only_ldshim) continue;
        void* h = dlopen(argv[i], RTLD_NOW);
        struct link_map* lm = NULL;
        if (h && dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0)
            printf("loader %s %s\n", argv[i], lm->l_name);
        else
            printf("loader %s not-found\n", argv[i]);
    }
    return 0;
}
