/*
 * ldshim — library search that matches glibc's dynamic loader.
 *
 * The public C API.  Usable from C99 and C++; no function throws.
 * Every function that can fail returns an ldshim_status code; turn it into
 * text with ldshim_strerror().  Only ldshim_* symbols are exported.
 */
#ifndef LDSHIM_H
#define LDSHIM_H

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes.  Zero is success; every failure is negative so that callers
 * can keep using "< 0 means error".  Values are stable ABI. */
typedef enum {
    LDSHIM_OK = 0,
    LDSHIM_ERR_INVALID_ARGUMENT = -1, /* a NULL or malformed argument */
    LDSHIM_ERR_NOT_FOUND = -2,        /* the search found no acceptable file */
    LDSHIM_ERR_BAD_OBJECT = -3,       /* a candidate file is not a loadable ELF object */
    LDSHIM_ERR_NO_MEMORY = -4,        /* an allocation failed */
    LDSHIM_ERR_BUFFER_TOO_SMALL = -5, /* an output buffer cannot hold the result */
    LDSHIM_ERR_SYSTEM = -6,           /* a system call failed unexpectedly */
    LDSHIM_ERR_UNSUPPORTED = -7       /* the request needs a feature this build lacks */
} ldshim_status;

/* A static, human-readable description of a status code.  Never NULL; an
 * unknown code yields "unknown ldshim status". */
const char *ldshim_strerror(int status);

/* The library version as "MAJOR.MINOR.PATCH". */
const char *ldshim_version(void);

#ifdef __cplusplus
}
#endif

#endif /* LDSHIM_H */
