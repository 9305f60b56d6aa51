/* The public header compiles as strict C99 and the library links from C. */
#include "ldshim.h"

#include <stdio.h>
#include <string.h>

static int failures = 0;
#define CHECK(cond) do { if (!(cond)) { fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); ++failures; } } while (0)

int main(void) {
    CHECK(strcmp(ldshim_strerror(LDSHIM_OK), "success") == 0);
    CHECK(strcmp(ldshim_strerror(LDSHIM_ERR_NOT_FOUND), "no acceptable file found") == 0);
    CHECK(strcmp(ldshim_strerror(12345), "unknown ldshim status") == 0);
    CHECK(ldshim_strerror(-12345) != NULL);
    CHECK(strchr(ldshim_version(), '.') != NULL);
    /* The compile-time version is the library's own. */
    CHECK(strcmp(ldshim_version(), LDSHIM_VERSION_STRING) == 0);
    {
        char numbers[32];
        snprintf(numbers, sizeof numbers, "%d.%d.%d", LDSHIM_VERSION_MAJOR, LDSHIM_VERSION_MINOR, LDSHIM_VERSION_PATCH);
        CHECK(strcmp(numbers, LDSHIM_VERSION_STRING) == 0);
    }
    printf("%d passed, %d failed\n", 7 - failures, failures);
    return failures != 0;
}
