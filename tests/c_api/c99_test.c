/* The public header compiles as strict C99 and the library links from C. */
#include "ldshim.h"

#include <stdio.h>
#include <string.h>

static int checks = 0, failures = 0;
#define CHECK(cond)                                                         \
    do {                                                                    \
        ++checks;                                                           \
        if (!(cond)) {                                                      \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); \
            ++failures;                                                     \
        }                                                                   \
    } while (0)

/* ldshim_status is int-sized and, for C, compatible with int: code written
 * when the status functions were declared as returning int still compiles
 * (with -pedantic-errors) and calls them through an int-returning pointer. */
typedef char status_is_int_sized[sizeof(ldshim_status) == sizeof(int) ? 1 : -1];
static int (*const int_query)(const void*, size_t, ldshim_meminfo_t*) = ldshim_memtype_query;

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
    {
        ldshim_meminfo_t info;
        char here = 0;
        int as_int = int_query(&here, 1, NULL);
        ldshim_status status = ldshim_memtype_query(&here, 1, NULL);
        CHECK(as_int == LDSHIM_ERR_INVALID_ARGUMENT && status == LDSHIM_ERR_INVALID_ARGUMENT);
        CHECK(strcmp(ldshim_strerror(status), "invalid argument") == 0);
        status = ldshim_memtype_query(&here, 1, &info);
        CHECK(status == LDSHIM_OK && info.type == LDSHIM_MEM_UNREGISTERED);
    }
    /* The reserved code still has a text; the sentinel is no status. */
    CHECK(strcmp(ldshim_strerror(LDSHIM_ERR_BAD_OBJECT), "not a loadable ELF object") == 0);
    CHECK(strcmp(ldshim_strerror(LDSHIM_STATUS_MAX_ENUM), "unknown ldshim status") == 0);
    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures != 0;
}
