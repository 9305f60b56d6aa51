// The loader's configuration as the loader binary itself states it: run
// `RTLD --help` (with the given GLIBC_TUNABLES and LD_HWCAP_MASK) and
// parse it, optionally through a small on-disk cache.  For ldsearch, which
// may ask about any loader (a root's, another machine's); the runtime never
// spawns anything (host/loader_in_process.h).
#include "host/loader_query.h"

#include "host/cpu.h"
#include "host/real_fs.h"
#include "loader/loaded_extent.h"
#include "loader/paths.h"
#include "machine/machine.h"

#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <spawn.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

extern char** environ;

namespace ldshim::host {

using loader::LoaderConfig;

namespace {

// One run of the loader binary with only `env`: what it wrote to `fd` (1 or
// 2; the other goes to /dev/null) and whether it exited 0.  nullopt, with
// why, when it could not be run at all.
struct LoaderRun {
    std::string text;
    bool ok = false;
};

std::optional<LoaderRun> run_loader(const std::string& rtld, std::vector<std::string> args,
                                    std::vector<std::string> env, int fd, std::string* error,
                                    const std::string& cwd = {}) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        if (error) *error = std::string("pipe: ") + std::strerror(errno);
        return std::nullopt;
    }
    args.insert(args.begin(), rtld);
    std::vector<char*> argv, envp;
    for (auto& a : args) argv.push_back(a.data());
    for (auto& e : env) envp.push_back(e.data());
    argv.push_back(nullptr);
    envp.push_back(nullptr);
    pid_t pid = -1;
    int rc = 0;
    if (cwd.empty()) {
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, fds[1], fd);
        posix_spawn_file_actions_addopen(&fa, fd == 1 ? 2 : 1, "/dev/null", O_WRONLY, 0);
        rc = posix_spawn(&pid, rtld.c_str(), &fa, nullptr, argv.data(), envp.data());
        posix_spawn_file_actions_destroy(&fa);
    } else {
        // posix_spawn_file_actions_addchdir_np is glibc 2.29's: ldsearch
        // runs on 2.28.  The child makes async-signal-safe calls only.
        pid = fork();
        if (pid == 0) {
            int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
            if (dup2(fds[1], fd) < 0 || null < 0 || dup2(null, fd == 1 ? 2 : 1) < 0 || chdir(cwd.c_str()) != 0)
                _exit(127);
            execve(rtld.c_str(), argv.data(), envp.data());
            _exit(127);
        }
        if (pid < 0) rc = errno;
    }
    close(fds[1]);
    if (rc != 0) {
        close(fds[0]);
        if (error) *error = "cannot run " + rtld + ": " + std::strerror(rc);
        return std::nullopt;
    }
    LoaderRun run;
    char buf[4096];
    for (;;) {
        ssize_t n = read(fds[0], buf, sizeof buf);
        if (n > 0) {
            if (run.text.size() < (1u << 20)) run.text.append(buf, static_cast<std::size_t>(n));  // a few KiB
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        break;
    }
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    run.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    return run;
}

// What the loader says: its --help (absent before glibc 2.33), and the
// debug output of one failed lookup (loader/loader_config.h, kProbe*),
// listing the loader itself so that nothing else is read.  Only the
// variables that change the loader's view of the CPU travel.
struct Answers {
    std::optional<std::string> help;
    std::string probe;
};

std::optional<Answers> ask_loader(const std::string& rtld, const LoaderCpuEnv& env, std::string* error) {
    auto help = run_loader(rtld, {"--help"}, env.entries, 1, error);
    if (!help) return std::nullopt;
    // Run in the loader's own directory, where its file name is a relative
    // element that is no directory.
    std::string path = rtld;
    if (!path.starts_with('/'))
        if (char* here = ::getcwd(nullptr, 0)) {
            path = std::string(here) + "/" + path;
            std::free(here);
        }
    const std::string dir(loader::directory_of(path));
    auto inputs = loader::probe_inputs(loader::base_name(path));
    std::vector<std::string> probe_env = env.entries;
    probe_env.push_back("LD_DEBUG=libs");
    probe_env.push_back("LD_PRELOAD=" + inputs.preload);
    probe_env.push_back("LD_LIBRARY_PATH=" + inputs.library_path);
    auto probe = run_loader(path, {"--list", path}, std::move(probe_env), 2, error, dir);
    if (!probe) return std::nullopt;
    Answers a;
    if (help->ok) a.help = std::move(help->text);
    a.probe = std::move(probe->text);
    return a;
}

std::optional<LoaderConfig> config_of(const std::string& rtld, const Answers& a, std::string* error) {
    std::string why;
    auto help = a.help ? std::optional<std::string_view>(*a.help) : std::nullopt;
    auto cfg = loader::config_from_answers(help, a.probe, &why);
    if (!cfg) {
        if (error) *error = rtld + (a.help ? "" : " (no --help)") + ": " + why;
        return std::nullopt;
    }
    cfg->rtld_path = rtld;
    // No probe shows the PIE refusal without a PIE to preload; the loader's
    // own file says whether it has it, and which objects it accepts (its
    // ELF class and machine: x86-64's, or aarch64's run through qemu).
    auto file = RealFs().open(rtld);
    if (!file.image) {
        if (error) *error = rtld + ": " + std::strerror(file.error);
        return std::nullopt;
    }
    auto b = file.image->bytes();
    std::string_view bytes(reinterpret_cast<const char*>(b.data()), b.size());
    cfg->behaviour.refuses_pie = loader::loader_refuses_pie(bytes);
    if (!loader::read_loader_machine(bytes, *cfg)) {
        if (error) *error = rtld + ": not an ELF file";
        return std::nullopt;
    }
    return cfg;
}

// /proc/sys/kernel/random/boot_id's first line, read with one system call.
std::string boot_id() {
    int fd = ::open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return {};
    char buf[64];
    ssize_t n = ::read(fd, buf, sizeof buf);
    ::close(fd);
    if (n <= 0) return {};
    std::string_view id(buf, static_cast<std::size_t>(n));
    return std::string(id.substr(0, id.find('\n')));
}

// The running program's GNU build ID, read from its own program headers
// (no system call); empty when it was linked without one.
std::string_view own_build_id() {
    const auto* phdr = reinterpret_cast<const ElfW(Phdr)*>(getauxval(AT_PHDR));
    const auto count = static_cast<std::size_t>(getauxval(AT_PHNUM));
    if (!phdr) return {};
    // The load bias: zero for a static executable that is not PIE (no PT_PHDR).
    std::uintptr_t bias = 0;
    for (std::size_t i = 0; i < count; ++i)
        if (phdr[i].p_type == PT_PHDR) bias = reinterpret_cast<std::uintptr_t>(phdr) - phdr[i].p_vaddr;
    auto id = loader::LoadedExtent{phdr, count, bias}.note(NT_GNU_BUILD_ID, loader::kGnuNoteName);
    if (!id) return {};
    return {reinterpret_cast<const char*>(id->data()), id->size()};
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
    auto mix_file = [&](const char* path) {
        struct stat st {};
        if (::stat(path, &st) != 0) return;
        mix(&st.st_dev, sizeof st.st_dev);
        mix(&st.st_ino, sizeof st.st_ino);
        mix(&st.st_size, sizeof st.st_size);
        mix(&st.st_mtim, sizeof st.st_mtim);
    };
    mix_str("ldshim-loader-config-v6");
    // The file holds what this program's parsers made of the answer: another
    // build of ldshim, with other rules, asks the loader afresh.  The build
    // ID says which build this is without a system call (no stat of
    // /proc/self/exe); without one, the program's file does.
    if (std::string_view id = own_build_id(); !id.empty())
        mix(id.data(), id.size());
    else
        mix_file("/proc/self/exe");
    mix_str(rtld);
    mix_file(rtld.c_str());
    for (const auto& e : env.entries) mix_str(e);
    mix_str("end of environment");
    mix_str(env.emulator);
    mix_str(cpu_identity());
    mix_str(boot_id());
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
    return hex;
}

// The variables that change the loader's view of the CPU.  QEMU_CPU is
// qemu-user's: it picks the CPU an emulated loader sees (an aarch64 root's
// ld.so runs on an x86-64 host through binfmt_misc).
bool steers_cpu_view(std::string_view e) {
    return e.starts_with("GLIBC_TUNABLES=") || e.starts_with("LD_HWCAP_MASK=") || e.starts_with("QEMU_CPU=");
}

}  // namespace

std::string emulator_identity(std::uint16_t machine) {
    if (machine == machine::kOwn && machine::modelled(machine)) return {};
    std::string out = "machine " + std::to_string(machine);
    constexpr const char* kDir = "/proc/sys/fs/binfmt_misc";
    DIR* d = ::opendir(kDir);
    if (!d) return out;
    // Every registered handler's interpreter: which one runs this machine
    // only its magic bytes say, and any of them changing is rare.
    while (const dirent* e = ::readdir(d)) {
        std::string entry;
        if (e->d_name[0] == '.' || read_whole_file(std::string(kDir) + "/" + e->d_name, entry) != 0) continue;
        auto at = entry.find("\ninterpreter ");
        if (at == std::string::npos) continue;
        std::string interp = entry.substr(at + 13, entry.find('\n', at + 13) - at - 13);
        struct stat st {};
        if (::stat(interp.c_str(), &st) != 0) continue;
        out += "\n" + interp + " " + std::to_string(st.st_dev) + " " + std::to_string(st.st_ino) + " " +
               std::to_string(st.st_size) + " " + std::to_string(st.st_mtim.tv_sec) + "." +
               std::to_string(st.st_mtim.tv_nsec);
    }
    ::closedir(d);
    return out;
}

LoaderCpuEnv LoaderCpuEnv::of(const std::vector<std::string>& environment) {
    LoaderCpuEnv env;
    for (const auto& e : environment)
        if (steers_cpu_view(e)) env.entries.push_back(e);
    return env;
}

LoaderCpuEnv LoaderCpuEnv::of_this_process() {
    LoaderCpuEnv env;
    for (char** e = environ; e && *e; ++e)
        if (steers_cpu_view(*e)) env.entries.emplace_back(*e);
    return env;
}

std::optional<LoaderConfig> query_running_loader(const std::string& rtld, std::string* error, const LoaderCpuEnv& env) {
    auto answers = ask_loader(rtld, env, error);
    if (!answers) return std::nullopt;
    return config_of(rtld, *answers, error);
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
    std::string file;
    read_whole_file(path, file);  // missing or unreadable: empty, asked afresh
    // The file holds the configuration the answers gave, not the answers:
    // a hit parses none of the loader's text.
    if (auto cached = loader::decode_config(file); cached && cached->rtld_path == rtld) return cached;
    auto cfg = query_running_loader(rtld, error, env);
    if (!cfg) return std::nullopt;
    // Best effort: a cache that cannot be written is simply not used.
    std::string parent = dir.substr(0, dir.rfind('/'));
    ::mkdir(parent.c_str(), 0700);
    ::mkdir(dir.c_str(), 0700);
    replace_file(path, loader::encode_config(*cfg));
    return cfg;
}

}  // namespace ldshim::host
