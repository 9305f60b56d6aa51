#include "host/startup_env.h"

#include "host/settings.h"

#include <fcntl.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <string_view>

namespace ldshim::host {
namespace {

std::optional<std::string> read_proc_environ() {
    int fd = ::open("/proc/self/environ", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::nullopt;
    std::string block;
    char buf[4096];
    for (;;) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            ::close(fd);
            return std::nullopt;
        }
        if (n == 0) break;
        block.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    return block;
}

// The start-up strings in memory: from the first one to the program's name
// that follows the last (the kernel's layout); nullopt where that is not
// plainly so.
std::optional<std::string> read_startup_strings() {
    const char* first = startup_env_strings();
    const char* end = reinterpret_cast<const char*>(getauxval(AT_EXECFN));
    if (!first || !end || first > end) return std::nullopt;
    // The kernel caps arguments and environment together at a quarter of
    // the stack limit; anything farther apart is not that layout.
    constexpr std::uintptr_t kMost = std::uintptr_t{32} << 20;
    std::uintptr_t size = reinterpret_cast<std::uintptr_t>(end) - reinterpret_cast<std::uintptr_t>(first);
    if (size > kMost || (size && end[-1] != '\0')) return std::nullopt;
    return std::string(first, size);
}

}  // namespace

std::vector<const char*> StartupEnvironment::envp() const {
    std::vector<const char*> out;
    out.reserve(strings.size() + 1);
    for (const auto& s : strings) out.push_back(s.c_str());
    out.push_back(nullptr);
    return out;
}

std::optional<StartupEnvironment> startup_environment(std::string* error) {
    std::optional<std::string> block = read_proc_environ();
    if (!block) block = read_startup_strings();
    if (!block) {
        if (error)
            *error =
                "cannot read the environment ld.so started with: /proc/self/environ is unreadable and "
                "libldshim was not handed the start-up environment";
        return std::nullopt;
    }
    StartupEnvironment env;
    env.strings = loader::startup_entries(*block);
    env.vars = loader::read_loader_environment(loader::env_entries(env.strings));
    return env;
}

}  // namespace ldshim::host
