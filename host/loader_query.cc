// The loader's configuration as the loader binary itself states it: run
// `RTLD --help` (with the given GLIBC_TUNABLES and LD_HWCAP_MASK) and
// parse it, optionally through a small on-disk cache.  For ldsearch, which
// may ask about any loader (a root's, another machine's); the runtime never
// spawns anything (host/loader_in_process.h).
#include "host/loader_query.h"

#include "host/cpu.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string_view>
#include <vector>

extern char** environ;

namespace ldshim::host {

using loader::LoaderConfig;
using loader::parse_ld_so_help;

namespace {

// The stdout of `RTLD --help`, or nullopt.
std::optional<std::string> run_help(const std::string& rtld, std::string* error, const LoaderCpuEnv& env) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        if (error) *error = std::string("pipe: ") + std::strerror(errno);
        return std::nullopt;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    // Only the variables that change the loader's view of the CPU travel.
    std::vector<std::string> keep = env.entries;
    std::vector<char*> envp;
    for (auto& s : keep) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::string arg0 = rtld, arg1 = "--help";
    char* argv[] = {arg0.data(), arg1.data(), nullptr};
    pid_t pid = -1;
    int rc = posix_spawn(&pid, rtld.c_str(), &fa, nullptr, argv, envp.data());
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (rc != 0) {
        close(fds[0]);
        if (error) *error = "cannot run " + rtld + ": " + std::strerror(rc);
        return std::nullopt;
    }
    std::string out;
    char buf[4096];
    for (;;) {
        ssize_t n = read(fds[0], buf, sizeof buf);
        if (n > 0) {
            out.append(buf, static_cast<std::size_t>(n));
            if (out.size() > (1u << 20)) break;  // a loader's help is a few KiB
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        break;
    }
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        if (error) *error = rtld + " --help failed";
        return std::nullopt;
    }
    return out;
}

// FNV-1a over everything that can change the loader's answer.
std::string cache_key(const std::string& rtld, const LoaderCpuEnv& env) {
    std::uint64_t h = 1469598103934665603ULL;
    auto mix = [&](const void* p, std::size_t n) {
        for (std::size_t i = 0; i < n; ++i) {
            h ^= static_cast<const unsigned char*>(p)[i];
            h *= 1099511628211ULL;
        }
    };
    auto mix_str = [&](const std::string& s) { mix(s.data(), s.size() + 1); };
    mix_str("ldshim-loader-config-v1");
    mix_str(rtld);
    struct stat st {};
    if (::stat(rtld.c_str(), &st) == 0) {
        mix(&st.st_dev, sizeof st.st_dev);
        mix(&st.st_ino, sizeof st.st_ino);
        mix(&st.st_size, sizeof st.st_size);
        mix(&st.st_mtim, sizeof st.st_mtim);
    }
    for (const auto& e : env.entries) mix_str(e);
    mix_str("end of environment");
    mix_str(cpu_identity());
    std::ifstream boot("/proc/sys/kernel/random/boot_id");
    std::string id;
    std::getline(boot, id);
    mix_str(id);
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
    return hex;
}

}  // namespace

LoaderCpuEnv LoaderCpuEnv::of(const std::vector<std::string>& environment) {
    LoaderCpuEnv env;
    for (const auto& e : environment)
        if (e.starts_with("GLIBC_TUNABLES=") || e.starts_with("LD_HWCAP_MASK=")) env.entries.push_back(e);
    return env;
}

LoaderCpuEnv LoaderCpuEnv::of_this_process() {
    std::vector<std::string> all;
    for (char** e = environ; e && *e; ++e) all.emplace_back(*e);
    return of(all);
}

std::optional<LoaderConfig> query_running_loader(const std::string& rtld, std::string* error, const LoaderCpuEnv& env) {
    auto out = run_help(rtld, error, env);
    if (!out) return std::nullopt;
    auto cfg = parse_ld_so_help(*out, error);
    if (cfg) cfg->rtld_path = rtld;
    return cfg;
}

std::string default_cache_dir() {
    if (const char* off = std::getenv("LDSHIM_NO_CACHE"); off && *off) return {};
    if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x == '/') return std::string(x) + "/ldshim";
    if (const char* h = std::getenv("HOME"); h && *h == '/') return std::string(h) + "/.cache/ldshim";
    return {};
}

std::optional<LoaderConfig> query_loader_cached(const std::string& rtld, const std::string& dir, std::string* error,
                                                const LoaderCpuEnv& env) {
    if (dir.empty()) return query_running_loader(rtld, error, env);
    std::string path = dir + "/loader-" + cache_key(rtld, env) + ".txt";
    {
        std::ifstream in(path);
        if (in) {
            std::stringstream ss;
            ss << in.rdbuf();
            if (auto cfg = parse_ld_so_help(ss.str(), nullptr)) {
                cfg->rtld_path = rtld;
                return cfg;
            }
        }
    }
    auto out = run_help(rtld, error, env);
    if (!out) return std::nullopt;
    auto cfg = parse_ld_so_help(*out, error);
    if (!cfg) return std::nullopt;
    cfg->rtld_path = rtld;
    // Best effort: a cache that cannot be written is simply not used.
    std::string parent = dir.substr(0, dir.rfind('/'));
    ::mkdir(parent.c_str(), 0700);
    ::mkdir(dir.c_str(), 0700);
    std::string tmp = path + "." + std::to_string(getpid()) + ".tmp";
    {
        std::ofstream o(tmp, std::ios::trunc);
        o << *out;
        if (!o) {
            std::remove(tmp.c_str());
            return cfg;
        }
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) std::remove(tmp.c_str());
    return cfg;
}

}  // namespace ldshim::host
