#include "host/settings.h"

#include "host/libc.h"

#include <sys/auxv.h>

#include <atomic>
#include <cstdlib>

namespace ldshim::host {
namespace {

Settings g_settings{};
std::atomic<bool> g_ready{false};

bool flag(const char* name) {
    const char* v = std::getenv(name);
    return v && *v && *v != '0';
}

[[gnu::constructor]] void read_settings() {
    Settings s{};
    if (!getauxval(AT_SECURE)) {
        s.disabled = flag("LDSHIM_DISABLE");
        s.debug = flag("LDSHIM_DEBUG");
    }
    g_settings = s;
    find_libc_functions();
    g_ready.store(true, std::memory_order_release);
}

}  // namespace

const Settings& settings() { return g_settings; }
bool settings_ready() { return g_ready.load(std::memory_order_acquire); }

}  // namespace ldshim::host
