/* ldsearch --diff's environment recorder: an LD_AUDIT module that appends
 * the environment each program started with (/proc/self/environ, what the
 * loader read) to $LDSEARCH_ENV_OUTPUT.PID, one record per exec:
 *
 *     "ldsearch-env " LENGTH "\n" ENVIRON-BYTES "\n"
 *
 * Why an audit module: it runs inside every exec's loader before the first
 * search, in its own namespace, and defines nothing but la_version, so it
 * changes no search (ld.so then only notes the callbacks it lacks).
 * Launchers (R, mpirun's daemons, module systems) export LD_LIBRARY_PATH
 * and friends just before exec, so ldsearch's own environment is wrong for
 * them.
 *
 * Freestanding: no libc (which would be searched for and loaded into the
 * audit namespace, adding searches to the log), raw system calls, no
 * allocation.  It never fails its host: any error just records nothing. */

#include <stddef.h>

#if defined(__x86_64__)
enum { SYS_READ = 0, SYS_WRITE = 1, SYS_CLOSE = 3, SYS_GETPID = 39, SYS_OPENAT = 257 };
static long sys(long n, long a, long b, long c, long d) {
    long r;
    register long r10 __asm__("r10") = d;
    __asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
    return r;
}
#elif defined(__aarch64__)
enum { SYS_READ = 63, SYS_WRITE = 64, SYS_CLOSE = 57, SYS_GETPID = 172, SYS_OPENAT = 56 };
static long sys(long n, long a, long b, long c, long d) {
    register long x8 __asm__("x8") = n;
    register long x0 __asm__("x0") = a;
    register long x1 __asm__("x1") = b;
    register long x2 __asm__("x2") = c;
    register long x3 __asm__("x3") = d;
    __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3) : "memory");
    return x0;
}
#else
#error "env_audit.c: no system-call recipe for this architecture"
#endif

enum { AT_FDCWD_ = -100, O_WRONLY_ = 01, O_CREAT_ = 0100, O_APPEND_ = 02000, O_CLOEXEC_ = 02000000 };
enum { kPathMax = 4096 };

static const char kEnviron[] = "/proc/self/environ";
static const char kOutputVar[] = "LDSEARCH_ENV_OUTPUT=";

static int open_read(const char* path) { return (int)sys(SYS_OPENAT, AT_FDCWD_, (long)path, O_CLOEXEC_, 0); }

static int write_all(int fd, const char* p, size_t n) {
    while (n > 0) {
        long w = sys(SYS_WRITE, fd, (long)p, (long)n, 0);
        if (w == -4) continue; /* EINTR */
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* One pass over /proc/self/environ: its length, and the value of
 * LDSEARCH_ENV_OUTPUT copied into out (empty if absent or too long). */
static long scan_environ(char* out, size_t cap) {
    int fd = open_read(kEnviron);
    if (fd < 0) return -1;
    char buf[1024];
    long total = 0;
    size_t at = 0; /* position inside the current entry */
    int match = 1; /* the current entry still matches kOutputVar's prefix */
    size_t keep = 0;
    out[0] = 0;
    for (;;) {
        long n = sys(SYS_READ, fd, (long)buf, sizeof buf, 0);
        if (n == -4) continue;
        if (n <= 0) break;
        for (long i = 0; i < n; ++i, ++total) {
            char c = buf[i];
            size_t plen = sizeof kOutputVar - 1;
            if (c == 0) {
                if (match && at >= plen && keep < cap) out[keep] = 0;
                at = 0, match = 1, keep = 0;
                continue;
            }
            if (at < plen)
                match = match && c == kOutputVar[at];
            else if (match && keep + 1 < cap)
                out[keep++] = c;
            else if (match)
                out[0] = 0, match = 0; /* too long: record nothing */
            ++at;
        }
    }
    sys(SYS_CLOSE, fd, 0, 0, 0);
    return total;
}

/* Appends the decimal n to s at *len. */
static void append_number(char* s, size_t* len, unsigned long n) {
    char digits[24];
    int k = 0;
    do digits[k++] = (char)('0' + n % 10);
    while ((n /= 10) != 0);
    while (k > 0) s[(*len)++] = digits[--k];
}

static void record(const char* prefix, long length) {
    char path[kPathMax + 32];
    size_t len = 0;
    while (prefix[len] && len < kPathMax) path[len] = prefix[len], ++len;
    path[len++] = '.';
    append_number(path, &len, (unsigned long)sys(SYS_GETPID, 0, 0, 0, 0));
    path[len] = 0;
    int out = (int)sys(SYS_OPENAT, AT_FDCWD_, (long)path, O_WRONLY_ | O_CREAT_ | O_APPEND_ | O_CLOEXEC_, 0600);
    if (out < 0) return;
    char head[48] = "ldsearch-env ";
    size_t hlen = sizeof "ldsearch-env " - 1;
    append_number(head, &hlen, (unsigned long)length);
    head[hlen++] = '\n';
    int in = open_read(kEnviron);
    int ok = in >= 0 && write_all(out, head, hlen) == 0;
    char buf[1024];
    while (ok) {
        long n = sys(SYS_READ, in, (long)buf, sizeof buf, 0);
        if (n == -4) continue;
        if (n <= 0) break;
        ok = write_all(out, buf, (size_t)n) == 0;
    }
    if (ok) write_all(out, "\n", 1);
    if (in >= 0) sys(SYS_CLOSE, in, 0, 0, 0);
    sys(SYS_CLOSE, out, 0, 0, 0);
}

/* The loader calls this first, once per exec, before any search. */
__attribute__((visibility("default"))) unsigned int la_version(unsigned int version) {
    char prefix[kPathMax];
    long length = scan_environ(prefix, sizeof prefix);
    if (length >= 0 && prefix[0] == '/') record(prefix, length);
#if defined(__aarch64__)
    /* glibc 2.35 changed aarch64's register layout for the PLT callbacks
     * (none here) with version 2 and refuses modules that return 1. */
    return version >= 2 ? 2 : version;
#else
    /* Version 1 is understood by every glibc that has LD_AUDIT. */
    return version >= 1 ? 1 : 0;
#endif
}
