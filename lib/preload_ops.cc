// libldshim's side of libldshim_preload.so (lib/preload_ops.h): the preload
// keeps only what must run in its own object (the exported entries, and its
// RTLD_NEXT lookups, which glibc answers relative to the object that calls
// dlsym); what it does lives here.
#include "lib/preload_ops.h"

#include "hooks/patcher.h"
#include "host/libc.h"
#include "host/settings.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

const char* g_hooks_log = nullptr;  // in the environment, which outlives us

void write_hooks_log() {
    int fd = open(g_hooks_log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return;
    ldshim_hooks_log_write(fd);
    close(fd);
}

// Puts ldshim in front of every dlopen slot (and the CUDA ones if asked:
// host/settings.h reads the variables).
void start() {
    const ldshim::host::Settings& settings = ldshim::host::settings();
    unsigned sets = LDSHIM_HOOK_DLOPEN;
    if (settings.cuda_hooks) sets |= LDSHIM_HOOK_CUDA;
    int rc = ldshim_hooks_install(sets);
    if (rc != LDSHIM_OK && (sets & LDSHIM_HOOK_CUDA)) {
        std::fprintf(stderr, "ldshim: LDSHIM_CUDA_HOOKS: %s\n", ldshim_strerror(rc));
        ldshim_hooks_install(LDSHIM_HOOK_DLOPEN);
    }
    g_hooks_log = settings.hooks_log;
    if (g_hooks_log && (sets & LDSHIM_HOOK_CUDA)) std::atexit(write_hooks_log);
}

// glibc starts the program through the preload's __libc_start_main after
// every library's constructor has run: the first moment at which every
// other preload has written what it writes.  A full pass then puts a GOT
// patcher whose constructor ran after ldshim's behind ldshim before main
// makes its first call.
int start_main(ldshim_start_main_fn real, int (*main)(int, char**, char**), int argc, char** argv, void (*init)(),
               void (*fini)(), void (*rtld_fini)(), void* stack_end) {
    if (!real) _exit(127);  // no libc to start the program with: nothing could run it
    ldshim_hooks_install(LDSHIM_HOOK_DLOPEN);
    return real(main, argc, argv, init, fini, rtld_fini, stack_end);
}

std::atomic<ldshim_dlopen_fn> g_libucm_dlopen{nullptr};

// libucm's own ucm_dlopen, looked up in libucm's scope (where the
// preload's definition is not), or null without UCX.
ldshim_dlopen_fn libucm_dlopen(ldshim_dlopen_fn next_dlopen) {
    if (ldshim_dlopen_fn f = g_libucm_dlopen.load(std::memory_order_acquire)) return f;
    void* h = next_dlopen ? next_dlopen("libucm.so.0", RTLD_NOW | RTLD_NOLOAD) : nullptr;
    if (!h) return nullptr;
    auto f = reinterpret_cast<ldshim_dlopen_fn>(dlsym(h, "ucm_dlopen"));
    dlclose(h);
    if (f) g_libucm_dlopen.store(f, std::memory_order_release);
    return f;
}

// ucm runs its own search on every name that is not an absolute path, so a
// relative result (a name with a slash, as glibc keeps it) is made absolute
// before ucm sees it: the same file.
void* ucm_next(ldshim_dlopen_fn next_dlopen, const char* file, int mode) {
    ldshim_dlopen_fn ucm = libucm_dlopen(next_dlopen);
    if (!ucm) return next_dlopen ? next_dlopen(file, mode) : nullptr;
    char buf[4096];
    if (file && file[0] != '/' && std::strchr(file, '/') && getcwd(buf, sizeof buf)) {
        std::size_t n = std::strlen(buf);
        if (n + 1 + std::strlen(file) < sizeof buf) {
            buf[n] = '/';
            std::strcpy(buf + n + 1, file);
            return ucm(buf, mode);
        }
    }
    return ucm(file, mode);
}

void* libc_next(const char* name) {
    ldshim::hooks::Patcher* patcher = ldshim::hooks::Patcher::existing();
    return patcher ? patcher->libc_next(name) : nullptr;
}

// Constant: relocated with the library (its own functions bind to
// themselves: -Bsymbolic-functions), usable before any constructor runs.
constexpr ldshim_preload_ops kOps = {
    sizeof(ldshim_preload_ops),
    ldshim::host::libc_dlsym_function,
    ldshim::host::libc_dlvsym_function,
    start,
    start_main,
    ldshim_caller_behind,
    ldshim_dlopen_decide,
    ldshim_dlmopen_decide,
    ldshim_dlerror_via,
    ldshim_dlopen_via,
    ucm_next,
    libc_next,
};

}  // namespace

extern "C" const ldshim_preload_ops* ldshim_get_preload_ops(void) { return &kOps; }
