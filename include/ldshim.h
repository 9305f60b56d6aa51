/*
 * ldshim — library search that matches glibc's dynamic loader.
 *
 * The public C API.  Usable from C99 and C++; no function throws.
 * Every function that can fail returns an ldshim_status code; turn it into
 * text with ldshim_strerror().  Only ldshim_* symbols are exported.
 */
#ifndef LDSHIM_H
#define LDSHIM_H

#include <stddef.h>

#include "ldshim_version.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes.  Zero is success; every failure is negative so that callers
 * can keep using "< 0 means error".  Values are stable ABI. */
typedef enum {
    LDSHIM_ALREADY_LOADED = 1,        /* ldshim_resolve: the name is an object already loaded */
    LDSHIM_OK = 0,
    LDSHIM_ERR_INVALID_ARGUMENT = -1, /* a NULL or malformed argument */
    LDSHIM_ERR_NOT_FOUND = -2,        /* the search found no acceptable file */
    LDSHIM_ERR_BAD_OBJECT = -3,       /* a candidate file is not a loadable ELF object */
    LDSHIM_ERR_NO_MEMORY = -4,        /* an allocation failed */
    LDSHIM_ERR_BUFFER_TOO_SMALL = -5, /* an output buffer cannot hold the result */
    LDSHIM_ERR_SYSTEM = -6,           /* a system call failed unexpectedly */
    LDSHIM_ERR_UNSUPPORTED = -7,      /* the request needs a feature this build lacks */
    LDSHIM_ERR_RANGE_SPANS = -8       /* a queried range crosses from one registered range
                                         or gap into another; the info describes the part
                                         that contains the first byte */
} ldshim_status;

/* A static, human-readable description of a status code.  Never NULL; an
 * unknown code yields "unknown ldshim status". */
const char *ldshim_strerror(int status);

/* The library version as "MAJOR.MINOR.PATCH": the run-time counterpart of
 * LDSHIM_VERSION_STRING, for callers that load libldshim.so.0 dynamically. */
const char *ldshim_version(void);

/* ---- dlopen from the real caller ----------------------------------------
 * glibc chooses where to search (RPATH chain, RUNPATH, $ORIGIN, namespace)
 * from the object that called dlopen.  When something sits in between (an
 * interposer that patched dlopen in the caller's GOT), these functions redo
 * the search as if `caller` -- any address inside the calling object, such
 * as a return address -- had called dlopen itself, then open the result by
 * its path, so the object in between no longer matters.  An address inside
 * no object (JIT code) counts as the main program, as in glibc.
 * Thread-safe; no lock is held across the real dlopen. */

/* dlopen with the caller taken from this function's own return address. */
void *ldshim_dlopen(const char *file, int mode);
void *ldshim_dlopen_from(const void *caller, const char *file, int mode);
/* LM_ID_BASE as for ldshim_dlopen_from; other namespaces are passed to
 * glibc's dlmopen unchanged (not resolved by ldshim yet). */
void *ldshim_dlmopen_from(long lmid, const void *caller, const char *file, int mode);
/* For interposers: the final open goes through `next` (their saved "real"
 * dlopen) instead of libc's.  NULL means glibc's. */
void *ldshim_dlopen_via(void *(*next)(const char *, int), const void *caller, const char *file, int mode);
/* The same for dlmopen; `next` has dlmopen's signature (Lmid_t is long). */
void *ldshim_dlmopen_via(void *(*next)(long, const char *, int), long lmid, const void *caller, const char *file,
                         int mode);

/* For an entry point reached by symbol rather than through the caller's own
 * import slot (an interposer's dlopen found through dlsym(RTLD_NEXT) or a
 * saved pointer): when `return_address` lies in a library that interposes
 * dlopen -- it defines dlopen itself, or its code sits in a dlopen import
 * slot that ldshim had written -- the first return address further up the
 * stack outside such libraries and ldshim (found with the unwinder);
 * otherwise `return_address` itself.  Best effort: code without unwind
 * information ends the walk, and then `return_address` is returned. */
const void *ldshim_caller_behind(const void *return_address);

/* The search alone, loading nothing.  Returns LDSHIM_OK with the path that
 * dlopen would open in `path`; LDSHIM_ALREADY_LOADED with the l_name of the
 * object it would return ("" for the main program); LDSHIM_ERR_NOT_FOUND
 * (the text glibc would give is then available from ldshim_dlerror());
 * LDSHIM_ERR_BUFFER_TOO_SMALL; LDSHIM_ERR_INVALID_ARGUMENT (NULL file, or a
 * NULL path with a non-zero size); LDSHIM_ERR_SYSTEM when this process's
 * loader cannot be modelled (ldshim_dlerror() says why); LDSHIM_ERR_NO_MEMORY;
 * LDSHIM_ERR_UNSUPPORTED when called from inside ldshim itself (a dlopen
 * made while ldshim builds its model). */
int ldshim_resolve(const void *caller, const char *file, int mode, char *path, size_t size);

/* The error of this thread's last failed ldshim_dlopen* or ldshim_resolve
 * (glibc's text for the same failure), then cleared; otherwise glibc's
 * dlerror(). */
char *ldshim_dlerror(void);
/* The same, with `next` (an interposer's dlerror) instead of glibc's. */
char *ldshim_dlerror_via(char *(*next)(void));

/* ---- Memory types ------------------------------------------------------
 * A process-wide registry from address range to memory type, fed by the
 * CUDA hooks (or by the caller).  Queries are wait-free: no lock, no
 * allocation, safe from any thread and from signal handlers while writers
 * run.  Memory the registry never saw is UNREGISTERED, never "host". */
typedef enum {
    LDSHIM_MEM_UNREGISTERED = 0,   /* never seen */
    LDSHIM_MEM_HOST,               /* known pageable host memory */
    LDSHIM_MEM_HOST_PINNED,
    LDSHIM_MEM_CUDA,
    LDSHIM_MEM_CUDA_MANAGED
} ldshim_memtype_t;

typedef struct {
    ldshim_memtype_t type;
    int device;          /* CUDA device ordinal; -1 when not applicable */
    const void *base;    /* the registered range, or the gap around an
                            unregistered pointer */
    size_t length;       /* its length; a gap reaching the top of the address
                            space saturates at SIZE_MAX */
} ldshim_meminfo_t;

/* Registers [base, base+length) as `type` on `device`, replacing whatever
 * part of existing ranges it overlaps.  length 0 does nothing.
 * LDSHIM_ERR_INVALID_ARGUMENT for an unknown type or UNREGISTERED. */
int ldshim_memtype_insert(const void *base, size_t length, ldshim_memtype_t type, int device);

/* Forgets [base, base+length); a range partly inside it is cut or split. */
int ldshim_memtype_remove(const void *base, size_t length);

/* Describes the range (or gap) containing ptr.  With length > 1, returns
 * LDSHIM_ERR_RANGE_SPANS when [ptr, ptr+length) does not lie inside that one
 * range or gap (info is still filled).  LDSHIM_ERR_INVALID_ARGUMENT if info
 * is NULL. */
int ldshim_memtype_query(const void *ptr, size_t length, ldshim_meminfo_t *info);

/* Which rule answered ldshim_memtype_classify. */
typedef enum {
    LDSHIM_MEMRULE_REGISTRY = 0,     /* the registry knew the range */
    LDSHIM_MEMRULE_DRIVER = 1,       /* the CUDA driver classified it; the whole
                                        allocation is registered from now on */
    LDSHIM_MEMRULE_DEFAULT_HOST = 2  /* unknown to both, or no CUDA driver:
                                        reported as LDSHIM_MEM_HOST */
} ldshim_memrule_t;

/* ldshim_memtype_query, then -- for an unregistered pointer -- the CUDA
 * driver if one is present (libcuda.so.1, loaded on first need; one
 * cuPointerGetAttributes and one cuMemGetAddressRange per miss), then
 * "host".  `rule` (may be NULL) says which answered.  Slower than
 * ldshim_memtype_query on a miss, and not wait-free there. */
int ldshim_memtype_classify(const void *ptr, size_t length, ldshim_meminfo_t *info, ldshim_memrule_t *rule);

/* ---- Hooks -------------------------------------------------------------
 * ldshim_hooks_install(LDSHIM_HOOK_CUDA) writes ldshim's hooks into the
 * import slots (GOT/PLT, GLOB_DAT and absolute data pointers) of the CUDA
 * allocation functions in every loaded object but ldshim's own, and into the
 * dlopen/dlclose/dlsym/dlvsym slots so that it sees every new object and
 * every function pointer fetched by name; cuGetProcAddress and
 * cudaGetDriverEntryPoint hand out hooked driver functions.  Each hook calls
 * the function it replaced (or the function another hooker had put in the
 * slot), returns its result unchanged, and keeps the memory-type registry
 * exact: allocations are inserted after they succeed, frees are removed
 * before the real free runs.  Thread-safe. */
#define LDSHIM_HOOK_CUDA 0x1u
/* ldshim_hooks_install(LDSHIM_HOOK_DLOPEN) writes only the loader's entry
 * points: every object's dlopen and dlmopen slots lead to ldshim first,
 * which resolves the name as that object (the true caller) and then calls
 * what the slot held before -- glibc, or another tool's wrapper -- with the
 * path it found; dlclose slots let it follow objects as they come and go.
 * libldshim_preload.so installs this set at start-up. */
#define LDSHIM_HOOK_DLOPEN 0x2u

/* LDSHIM_ERR_INVALID_ARGUMENT for no flag or an unknown one;
 * LDSHIM_ERR_UNSUPPORTED for LDSHIM_HOOK_CUDA in a build without CUDA
 * support (no CUDA headers at build time), or on an architecture without
 * slot patching.  Sets accumulate; installing again picks up new objects. */
int ldshim_hooks_install(unsigned flags);
/* Restores every slot that still holds ldshim's value to what was there
 * before; slots that someone else rewrote since are left alone (logged).
 * Function pointers handed out earlier keep working (hooks are never
 * unmapped) but no longer feed the registry. */
int ldshim_hooks_uninstall(void);
/* Patches objects loaded since the last look.  The dlopen/dlclose hooks
 * call this; a program that loads libraries by other means (a dlopen
 * pointer fetched before install, a raw mmap loader) can call it. */
int ldshim_hooks_refresh(void);

/* Which interception paths are active: a bit set of these. */
#define LDSHIM_PATH_GOT 0x1u           /* at least one CUDA import slot patched */
#define LDSHIM_PATH_DLOPEN 0x2u        /* dlopen/dlclose slots patched: new objects followed */
#define LDSHIM_PATH_DLSYM 0x4u         /* dlsym/dlvsym slots patched: lookups by name hooked */
#define LDSHIM_PATH_PROC_ADDRESS 0x8u  /* cuGetProcAddress / cudaGetDriverEntryPoint hooked */
unsigned ldshim_hooks_active(void);

/* The operation log: one entry per slot write, in order. */
typedef enum {
    LDSHIM_HOOK_OP_PATCHED = 0,  /* the slot held the function itself; now the hook */
    LDSHIM_HOOK_OP_CHAINED = 1,  /* the slot held another hooker's function; the hook calls it */
    LDSHIM_HOOK_OP_RESTORED = 2, /* uninstall put the old value back */
    LDSHIM_HOOK_OP_LEFT = 3,     /* uninstall found someone else's value and left it */
    LDSHIM_HOOK_OP_FAILED = 4    /* the write failed (detail says why); slot unchanged */
} ldshim_hook_op_status_t;

typedef struct {
    const char *object;   /* the object's path ("" for the main program) */
    const char *symbol;   /* e.g. "cuMemAlloc_v2" */
    const char *version;  /* the symbol version the import names, or "" */
    const void *slot;     /* the address written */
    const void *old_value;
    const void *new_value;
    const void *target;   /* what the hook calls */
    ldshim_hook_op_status_t status;
    const char *detail;   /* "" or a reason */
} ldshim_hook_op_t;

size_t ldshim_hooks_log_size(void);
/* Fills *op with entry `index`; its strings live as long as the process.
 * LDSHIM_ERR_INVALID_ARGUMENT for an index past the end or a NULL op. */
int ldshim_hooks_log_get(size_t index, ldshim_hook_op_t *op);
/* Writes the log to fd, one tab-separated line per entry. */
int ldshim_hooks_log_write(int fd);
/* "patched", "chained", ... ; "unknown" for anything else. */
const char *ldshim_hook_op_status_name(int status);

/* Allocation events, for subscribers such as UCX's memory-event handlers. */
typedef enum { LDSHIM_EVENT_ALLOC = 0, LDSHIM_EVENT_FREE = 1 } ldshim_event_kind_t;
typedef struct {
    ldshim_event_kind_t kind;
    ldshim_memtype_t type;
    int device;
    const void *base;
    size_t length;
    const char *function;  /* the hooked function, e.g. "cudaMallocAsync_ptsz" */
} ldshim_mem_event_t;
typedef void (*ldshim_mem_callback_t)(const ldshim_mem_event_t *event, void *arg);
/* At most 16 subscriptions; LDSHIM_ERR_NO_MEMORY past that.  Free events
 * are delivered before the real free runs.  A callback may still be running
 * in another thread when unsubscribe returns. */
int ldshim_hooks_subscribe(ldshim_mem_callback_t callback, void *arg);
int ldshim_hooks_unsubscribe(ldshim_mem_callback_t callback, void *arg);

#ifdef __cplusplus
}
#endif

#endif /* LDSHIM_H */
