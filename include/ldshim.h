/*
 * ldshim — library search that matches glibc's dynamic loader.
 *
 * The public C API.  Usable from C99 and C++; no function throws.
 * Every function that can fail returns an ldshim_status code; turn it into
 * text with ldshim_strerror().  Only ldshim_* symbols are exported.
 * What may change within libldshim.so.0 (and what never will): docs/abi.md.
 *
 * Examples.  tests/c_api/doc_examples_test.sh compiles every block between
 * the lines "@code" and "@endcode" in this header as a C99 program (after
 * an #include <ldshim.h>) and links it against libldshim.
 *
 * Where dlopen("libz.so.1") from this program would find the library, and
 * opening it as glibc would for the object that makes the call:
 * @code
 * #include <dlfcn.h>
 * #include <stdio.h>
 *
 * static const char anchor;  // any address inside the calling object
 *
 * int main(void) {
 *     char path[4096];
 *     void *handle;
 *     ldshim_status rc = ldshim_resolve(&anchor, "libz.so.1", RTLD_NOW, path, sizeof path);
 *     if (rc == LDSHIM_OK) {
 *         printf("would open %s\n", path);
 *     } else if (rc == LDSHIM_ALREADY_LOADED) {
 *         printf("already loaded as \"%s\"\n", path);
 *     } else {
 *         const char *why = rc == LDSHIM_ERR_NOT_FOUND ? ldshim_dlerror() : NULL;
 *         fprintf(stderr, "%s%s%s\n", ldshim_strerror(rc), why ? ": " : "", why ? why : "");
 *     }
 *     handle = ldshim_dlopen("libz.so.1", RTLD_NOW);  // caller: main's own object
 *     if (!handle) {
 *         const char *why = ldshim_dlerror();
 *         fprintf(stderr, "%s\n", why ? why : "dlopen failed");
 *         return 1;
 *     }
 *     dlclose(handle);
 *     return 0;
 * }
 * @endcode
 *
 * The memory-type registry, fed by the CUDA hooks or by hand:
 * @code
 * #include <stdio.h>
 *
 * static void on_event(const ldshim_mem_event_t *event, void *arg) {
 *     (void)arg;
 *     printf("%s %p +%zu\n", event->kind == LDSHIM_EVENT_ALLOC ? "alloc" : "free", event->base, event->length);
 * }
 *
 * int main(void) {
 *     static char buffer[256];
 *     ldshim_meminfo_t info;
 *     ldshim_status rc;
 *
 *     ldshim_hooks_subscribe(on_event, NULL);
 *     rc = ldshim_hooks_install(LDSHIM_HOOK_CUDA);
 *     if (rc != LDSHIM_OK)  // LDSHIM_ERR_UNSUPPORTED in a build without CUDA
 *         fprintf(stderr, "no CUDA hooks: %s\n", ldshim_strerror(rc));
 *
 *     rc = ldshim_memtype_insert(buffer, sizeof buffer, LDSHIM_MEM_HOST_PINNED, -1);
 *     if (rc == LDSHIM_OK)
 *         rc = ldshim_memtype_query(buffer + 16, 32, &info);
 *     if (rc == LDSHIM_OK && info.type == LDSHIM_MEM_HOST_PINNED)
 *         printf("pinned range %p +%zu\n", info.base, info.length);
 *     else if (rc < 0)  // LDSHIM_ERR_RANGE_SPANS, or a code this header does not know
 *         fprintf(stderr, "query: %s\n", ldshim_strerror(rc));
 *     ldshim_memtype_remove(buffer, sizeof buffer);
 *
 *     ldshim_hooks_uninstall();
 *     ldshim_hooks_unsubscribe(on_event, NULL);
 *     return 0;
 * }
 * @endcode
 */
#ifndef LDSHIM_H
#define LDSHIM_H

#include <stddef.h>

#include "ldshim_version.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes.  Zero is success; every failure is negative so that callers
 * can keep using "< 0 means error".  Values are stable ABI: none is ever
 * renumbered, and new codes are only appended, so a caller must treat a code
 * it does not know as an error (docs/abi.md).  Each function's comment lists
 * every code it can return.
 *
 * The functions that return a status are declared as returning this type;
 * that is the same ABI as int: with negative values and
 * LDSHIM_STATUS_MAX_ENUM the type is int-sized, and on x86-64 and aarch64 it
 * is passed and returned exactly as an int.  Code that keeps the result in
 * an int still compiles; only C++ code that stores a function's address
 * as int (*)(...) must now name ldshim_status. */
typedef enum {
    LDSHIM_ALREADY_LOADED = 1, /* ldshim_resolve: the name is an object already loaded */
    LDSHIM_OK = 0,
    LDSHIM_ERR_INVALID_ARGUMENT = -1, /* a NULL or malformed argument */
    LDSHIM_ERR_NOT_FOUND = -2,        /* the search found no acceptable file, or glibc
                                         would reject the file or a dependency */
    LDSHIM_ERR_BAD_OBJECT = -3,       /* reserved, never returned: a file that is not a
                                         loadable object is skipped or fails the request
                                         with NOT_FOUND, as in glibc's dlopen.  The name
                                         and number stay taken */
    LDSHIM_ERR_NO_MEMORY = -4,        /* an allocation failed, or a fixed table is full */
    LDSHIM_ERR_BUFFER_TOO_SMALL = -5, /* an output buffer cannot hold the result */
    LDSHIM_ERR_SYSTEM = -6,           /* a system call failed, or the loader cannot be modelled */
    LDSHIM_ERR_UNSUPPORTED = -7,      /* the request needs a feature this build or platform
                                         lacks, or cannot be served from where it is made */
    LDSHIM_ERR_RANGE_SPANS = -8,      /* a queried range crosses from one registered range
                                         or gap into another; the info describes the part
                                         that contains the first byte */
    /* Not a status: keeps the type int-sized with any compiler option and
     * makes every int a valid value of it (a code from a newer library). */
    LDSHIM_STATUS_MAX_ENUM = 0x7fffffff
} ldshim_status;

/* A static, human-readable description of a status code.  Never NULL; an
 * unknown code yields "unknown ldshim status".  It takes an int, not an
 * ldshim_status, on purpose: it accepts any value (a code from a newer
 * library, an int a caller kept), and C and C++ both pass an ldshim_status
 * to it without a cast. */
const char* ldshim_strerror(int status);

/* The library version as "MAJOR.MINOR.PATCH": the run-time counterpart of
 * LDSHIM_VERSION_STRING, for callers that load libldshim.so.0 dynamically. */
const char* ldshim_version(void);

/* ---- dlopen from the real caller ----------------------------------------
 * glibc chooses where to search (RPATH chain, RUNPATH, $ORIGIN, namespace)
 * from the object that called dlopen.  When something sits in between (an
 * interposer that patched dlopen in the caller's GOT), these functions redo
 * the search as if `caller` -- any address inside the calling object, such
 * as a return address -- had called dlopen itself, so the object in between
 * no longer matters.  The answer is opened so that glibc knows it as it
 * would had the caller called it, by the name asked for too: where `next`
 * is glibc's own, glibc itself is called from inside the caller's object;
 * otherwise `next` opens the path, and glibc is then taught the name by an
 * RTLD_NOLOAD search from the caller.  Under a shadow stack (CET, GCS) a
 * bare name is not taught.  An address inside no object (JIT code) counts
 * as the main program, as in glibc.
 * Thread-safe; no lock is held across the real dlopen. */

/* dlopen with the caller taken from this function's own return address. */
void* ldshim_dlopen(const char* file, int mode);
void* ldshim_dlopen_from(const void* caller, const char* file, int mode);
/* LM_ID_BASE as for ldshim_dlopen_from; other namespaces are passed to
 * glibc's dlmopen unchanged (not resolved by ldshim yet). */
void* ldshim_dlmopen_from(long lmid, const void* caller, const char* file, int mode);
/* For interposers: the final open goes through `next` (their saved "real"
 * dlopen) instead of libc's.  NULL means glibc's. */
void* ldshim_dlopen_via(void* (*next)(const char*, int), const void* caller, const char* file, int mode);
/* dlopen's type. */
typedef void* (*ldshim_dlopen_fn)(const char* file, int mode);
/* For an entry point that can pass a call on by a jump, leaving its
 * caller's return address in place (an assembly trampoline; ldshim's own
 * entries are made so): when ldshim has an answer, it carries it out as
 * ldshim_dlopen_via does, stores what dlopen returns in *handle and returns
 * NULL; otherwise it returns the function the call must go on to unchanged
 * (`next`, or glibc's dlopen) and touches nothing.  Jumped to, that function
 * sees the caller that the entry's caller saw, so a call ldshim does not
 * answer -- switched off, not started, or a loader it cannot model -- is
 * searched from the same object as without ldshim. */
ldshim_dlopen_fn ldshim_dlopen_decide(ldshim_dlopen_fn next, const void* caller, const char* file, int mode,
                                      void** handle);
/* dlmopen's type (Lmid_t is long), and the same decision for it: NULL with
 * *handle set when ldshim carried the call out, else the function the call
 * goes on to unchanged. */
typedef void* (*ldshim_dlmopen_fn)(long lmid, const char* file, int mode);
ldshim_dlmopen_fn ldshim_dlmopen_decide(ldshim_dlmopen_fn next, long lmid, const void* caller, const char* file,
                                        int mode, void** handle);
/* For interposers that keep their own fallback (UCX's ucm): the same as
 * ldshim_dlopen_via when ldshim has an answer, and nothing at all when it
 * has none, so that the caller's own logic runs exactly as without ldshim.
 * Returns
 *   LDSHIM_OK                    ldshim answered and carried the answer out
 *                                through `next` (NULL: glibc's dlopen);
 *                                *handle is what dlopen returns: the object,
 *                                or NULL with dlerror() (glibc's, or
 *                                ldshim_dlerror()) saying why it failed;
 *   LDSHIM_ERR_UNSUPPORTED       no answer, nothing opened: ldshim is switched
 *                                off (LDSHIM_DISABLE), not started yet, or
 *                                called from inside itself (also a call of
 *                                its own forwarding that came back);
 *   LDSHIM_ERR_SYSTEM            no answer, nothing opened: this process's
 *                                loader cannot be modelled (ldshim_dlerror()
 *                                says why);
 *   LDSHIM_ERR_INVALID_ARGUMENT  a NULL file (dlopen(NULL) needs no search)
 *                                or a NULL handle.
 * *handle is written only with LDSHIM_OK. */
ldshim_status ldshim_dlopen_try(void* (*next)(const char*, int), const void* caller, const char* file, int mode,
                                void** handle);
/* The same for dlmopen; `next` has dlmopen's signature (Lmid_t is long). */
void* ldshim_dlmopen_via(void* (*next)(long, const char*, int), long lmid, const void* caller, const char* file,
                         int mode);

/* For an entry point reached by symbol rather than through the caller's own
 * import slot (an interposer's dlopen found through dlsym(RTLD_NEXT) or a
 * saved pointer): when `return_address` lies in a library that interposes
 * dlopen -- it defines dlopen itself, or its code sits in a dlopen import
 * slot that ldshim had written -- the first return address further up the
 * stack outside such libraries and ldshim (found with the unwinder);
 * otherwise `return_address` itself.  Best effort: code without unwind
 * information ends the walk, and then `return_address` is returned. */
const void* ldshim_caller_behind(const void* return_address);

/* The search alone, loading nothing.  Returns
 *   LDSHIM_OK                    with the path that dlopen would open in `path`;
 *   LDSHIM_ALREADY_LOADED        with the l_name of the object it would return
 *                                ("" for the main program) in `path`;
 *   LDSHIM_ERR_NOT_FOUND         when that dlopen would fail (no acceptable file,
 *                                a file or a dependency glibc rejects; glibc's text
 *                                is then available from ldshim_dlerror()), or with
 *                                RTLD_NOLOAD when the object is not loaded (no text);
 *   LDSHIM_ERR_BUFFER_TOO_SMALL  when the answer and its NUL do not fit in `size`
 *                                bytes (always for size 0);
 *   LDSHIM_ERR_INVALID_ARGUMENT  for a NULL file, or a NULL path with a non-zero size;
 *   LDSHIM_ERR_SYSTEM            when this process's loader cannot be modelled
 *                                (ldshim_dlerror() says why);
 *   LDSHIM_ERR_NO_MEMORY         when building or asking the model failed for lack
 *                                of memory;
 *   LDSHIM_ERR_UNSUPPORTED       when called from inside ldshim itself (a dlopen
 *                                made while ldshim builds its model).
 * `path` is written only for the first two. */
ldshim_status ldshim_resolve(const void* caller, const char* file, int mode, char* path, size_t size);

/* The error of this thread's last failed ldshim_dlopen* or ldshim_resolve
 * (glibc's text for the same failure), then cleared; otherwise glibc's
 * dlerror(). */
char* ldshim_dlerror(void);
/* The same, with `next` (an interposer's dlerror) instead of glibc's. */
char* ldshim_dlerror_via(char* (*next)(void));

/* ---- Memory types ------------------------------------------------------
 * A process-wide registry from address range to memory type, fed by the
 * CUDA hooks (or by the caller).  Queries are wait-free: no lock, no
 * allocation, safe from any thread and from signal handlers while writers
 * run.  Memory the registry never saw is UNREGISTERED, never "host". */
typedef enum {
    LDSHIM_MEM_UNREGISTERED = 0, /* never seen */
    LDSHIM_MEM_HOST,             /* known pageable host memory */
    LDSHIM_MEM_HOST_PINNED,
    LDSHIM_MEM_CUDA,
    LDSHIM_MEM_CUDA_MANAGED
} ldshim_memtype_t;

typedef struct {
    ldshim_memtype_t type;
    int device;       /* CUDA device ordinal; -1 when not applicable */
    const void* base; /* the registered range, or the gap around an
                         unregistered pointer */
    size_t length;    /* its length; a gap reaching the top of the address
                         space saturates at SIZE_MAX */
} ldshim_meminfo_t;

/* Registers [base, base+length) as `type` on `device`, replacing whatever
 * part of existing ranges it overlaps (a range past the top of the address
 * space is cut there).  length 0 does nothing.  Returns LDSHIM_OK;
 * LDSHIM_ERR_INVALID_ARGUMENT for a type that is not one of
 * LDSHIM_MEM_HOST .. LDSHIM_MEM_CUDA_MANAGED (UNREGISTERED included), even
 * with length 0; LDSHIM_ERR_NO_MEMORY. */
ldshim_status ldshim_memtype_insert(const void* base, size_t length, ldshim_memtype_t type, int device);

/* Forgets [base, base+length); a range partly inside it is cut or split.
 * Returns LDSHIM_OK (also when nothing was registered there);
 * LDSHIM_ERR_NO_MEMORY. */
ldshim_status ldshim_memtype_remove(const void* base, size_t length);

/* Describes the range (or gap) containing ptr.  Returns LDSHIM_OK;
 * LDSHIM_ERR_RANGE_SPANS (only with length > 1) when [ptr, ptr+length) does
 * not lie inside that one range or gap (info is still filled);
 * LDSHIM_ERR_INVALID_ARGUMENT if info is NULL. */
ldshim_status ldshim_memtype_query(const void* ptr, size_t length, ldshim_meminfo_t* info);

/* Which rule answered ldshim_memtype_classify. */
typedef enum {
    LDSHIM_MEMRULE_REGISTRY = 0,    /* the registry knew the range */
    LDSHIM_MEMRULE_DRIVER = 1,      /* the CUDA driver classified it; the whole
                                       allocation is registered from now on */
    LDSHIM_MEMRULE_DEFAULT_HOST = 2 /* unknown to both, or no CUDA driver:
                                       reported as LDSHIM_MEM_HOST */
} ldshim_memrule_t;

/* ldshim_memtype_query, then -- for an unregistered pointer -- the CUDA
 * driver if one is present (libcuda.so.1, loaded on first need; one
 * cuPointerGetAttributes and one cuMemGetAddressRange per miss), then
 * "host".  `rule` (may be NULL) says which answered.  Slower than
 * ldshim_memtype_query on a miss, and not wait-free there.  Returns
 * LDSHIM_OK; LDSHIM_ERR_RANGE_SPANS as ldshim_memtype_query does (info and
 * rule still filled); LDSHIM_ERR_INVALID_ARGUMENT if info is NULL;
 * LDSHIM_ERR_NO_MEMORY when registering the driver's answer failed (info
 * and rule are then not written). */
ldshim_status ldshim_memtype_classify(const void* ptr, size_t length, ldshim_meminfo_t* info, ldshim_memrule_t* rule);

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

/* Sets accumulate; installing again picks up new objects.  Returns
 * LDSHIM_OK (also with LDSHIM_DISABLE=1 in the environment, where it writes
 * nothing); LDSHIM_ERR_INVALID_ARGUMENT for no flag or an unknown one;
 * LDSHIM_ERR_UNSUPPORTED for LDSHIM_HOOK_CUDA in a build without CUDA
 * support (no CUDA headers at build time), or on an architecture without
 * slot patching; LDSHIM_ERR_NO_MEMORY when a pass ran out of memory (the
 * hooks may then be in place in only some objects; calling it again
 * rescans them all). */
ldshim_status ldshim_hooks_install(unsigned flags);
/* Restores every slot that still holds ldshim's value to what was there
 * before; slots that someone else rewrote since are left alone (logged).
 * Function pointers handed out earlier keep working (hooks are never
 * unmapped) but no longer feed the registry.  Returns LDSHIM_OK (also when
 * nothing was installed); LDSHIM_ERR_NO_MEMORY when it ran out of memory
 * part-way (hooks may remain). */
ldshim_status ldshim_hooks_uninstall(void);
/* Patches objects loaded since the last look.  The dlopen/dlclose hooks
 * call this; a program that loads libraries by other means (a dlopen
 * pointer fetched before install, a raw mmap loader) can call it.  Returns
 * LDSHIM_OK (also when nothing is installed or nothing changed);
 * LDSHIM_ERR_NO_MEMORY when the pass ran out of memory. */
ldshim_status ldshim_hooks_refresh(void);

/* Which interception paths are active: a bit set of these. */
#define LDSHIM_PATH_GOT 0x1u          /* at least one CUDA import slot patched */
#define LDSHIM_PATH_DLOPEN 0x2u       /* dlopen/dlclose slots patched: new objects followed */
#define LDSHIM_PATH_DLSYM 0x4u        /* dlsym/dlvsym slots patched: lookups by name hooked */
#define LDSHIM_PATH_PROC_ADDRESS 0x8u /* cuGetProcAddress / cudaGetDriverEntryPoint hooked */
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
    const char* object;  /* the object's path ("" for the main program) */
    const char* symbol;  /* e.g. "cuMemAlloc_v2" */
    const char* version; /* the symbol version the import names, or "" */
    const void* slot;    /* the address written */
    const void* old_value;
    const void* new_value;
    const void* target; /* what the hook calls */
    ldshim_hook_op_status_t status;
    const char* detail; /* "" or a reason */
} ldshim_hook_op_t;

size_t ldshim_hooks_log_size(void);
/* Fills *op with entry `index`; its strings live as long as the process.
 * Returns LDSHIM_OK; LDSHIM_ERR_INVALID_ARGUMENT for an index past the end
 * or a NULL op. */
ldshim_status ldshim_hooks_log_get(size_t index, ldshim_hook_op_t* op);
/* Writes the log to fd, one tab-separated line per entry.  Returns
 * LDSHIM_OK; LDSHIM_ERR_SYSTEM when fd is not open or a write fails (part
 * of the log may have been written); LDSHIM_ERR_NO_MEMORY. */
ldshim_status ldshim_hooks_log_write(int fd);
/* "patched", "chained", ... ; "unknown" for anything else. */
const char* ldshim_hook_op_status_name(int status);

/* Allocation events, for subscribers such as UCX's memory-event handlers. */
typedef enum { LDSHIM_EVENT_ALLOC = 0, LDSHIM_EVENT_FREE = 1 } ldshim_event_kind_t;
typedef struct {
    ldshim_event_kind_t kind;
    ldshim_memtype_t type;
    int device;
    const void* base;
    size_t length;
    const char* function; /* the hooked function, e.g. "cudaMallocAsync_ptsz" */
} ldshim_mem_event_t;
typedef void (*ldshim_mem_callback_t)(const ldshim_mem_event_t* event, void* arg);
/* Calls callback(event, arg) for every allocation event.  Free events are
 * delivered before the real free runs.  At most 16 subscriptions; the same
 * pair subscribed twice is called twice.  Returns LDSHIM_OK;
 * LDSHIM_ERR_INVALID_ARGUMENT for a NULL callback; LDSHIM_ERR_NO_MEMORY
 * when 16 are already subscribed. */
ldshim_status ldshim_hooks_subscribe(ldshim_mem_callback_t callback, void* arg);
/* Removes one subscription of the pair (callback, arg).  A callback may
 * still be running in another thread when it returns.  Returns LDSHIM_OK;
 * LDSHIM_ERR_INVALID_ARGUMENT for a NULL callback or a pair not subscribed. */
ldshim_status ldshim_hooks_unsubscribe(ldshim_mem_callback_t callback, void* arg);

#ifdef __cplusplus
}
#endif

#endif /* LDSHIM_H */
