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
    printf("%d passed, %d failed\n", 5 - failures, failures);
    return failures != 0;
}
