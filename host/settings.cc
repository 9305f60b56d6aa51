#include "host/settings.h"

#include "host/libc.h"

#include <sys/auxv.h>

#include <unistd.h>

#include <atomic>

namespace ldshim::host {
namespace {

Settings g_settings{};
std::atomic<bool> g_ready{false};
char* const* g_environment = nullptr;
const char* g_startup_strings = nullptr;

// getenv's answer (the first NAME=VALUE), read by hand from the block the
// constructor was handed: each libc function or variable libldshim uses at
// start-up is one more lookup through every loaded object, in every process
// the preload is in.
const char* env(const char* name) {
    for (char* const* e = g_environment; e && *e; ++e) {
        const char* a = *e;
        const char* b = name;
        while (*b && *a == *b) ++a, ++b;
        if (!*b && *a == '=') return a + 1;
    }
    return nullptr;
}

bool flag(const char* name) {
    const char* v = env(name);
    return v && *v && *v != '0';
}

// glibc calls each constructor with the program's argc, argv and the
// environment: at start-up the block ld.so read, at a dlopen the current one.
[[gnu::constructor]] void read_settings(int argc, char** argv, char** envp) {
    g_environment = envp;
    // The start-up array lies right after argv's null (the kernel's layout);
    // its first string is where the start-up strings begin.
    if (envp && argv && argc >= 0 && envp == argv + argc + 1) g_startup_strings = envp[0];
    Settings s{};
    s.disabled = flag("LDSHIM_DISABLE");
    s.debug = flag("LDSHIM_DEBUG");
    s.cuda_hooks = flag("LDSHIM_CUDA_HOOKS");
    s.hooks_log = env("LDSHIM_HOOKS_LOG");
    const char* rp = env("LDSHIM_RETURN_POINTS");
    s.no_return_points = rp && rp[0] == '0' && !rp[1];
    // Secure mode is asked only when a variable is set: in a process that
    // sets none the answer changes nothing, and getauxval is one more lookup.
    if ((s.disabled || s.debug || s.cuda_hooks || s.hooks_log || s.no_return_points) && getauxval(AT_SECURE))
        s = Settings{};
    g_settings = s;
    find_libc_functions();
    g_ready.store(true, std::memory_order_release);
}

}  // namespace

const Settings& settings() { return g_settings; }
bool settings_ready() { return g_ready.load(std::memory_order_acquire); }
const char* startup_env_strings() { return g_startup_strings; }

}  // namespace ldshim::host
