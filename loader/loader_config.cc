#include "loader/loader_config.h"

#include <cpuid.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>

extern char** environ;

namespace ldshim::loader {
namespace {

std::vector<std::string_view> lines_of(std::string_view text) {
    std::vector<std::string_view> out;
    while (!text.empty()) {
        auto nl = text.find('\n');
        out.push_back(text.substr(0, nl));
        if (nl == std::string_view::npos) break;
        text.remove_prefix(nl + 1);
    }
    return out;
}

// "  NAME (tag, tag)" -> NAME and whether `tag` is listed.
struct HelpItem {
    std::string_view name;
    std::string_view tags;
    bool has(std::string_view t) const {
        for (std::size_t p = tags.find(t); p != std::string_view::npos; p = tags.find(t, p + 1)) {
            bool start = p == 0 || tags[p - 1] == ' ' || tags[p - 1] == ';' || tags[p - 1] == ',';
            bool end = p + t.size() == tags.size() || tags[p + t.size()] == ',' || tags[p + t.size()] == ';';
            if (start && end) return true;
        }
        return false;
    }
};

HelpItem parse_item(std::string_view line) {
    line.remove_prefix(std::min<std::size_t>(2, line.size()));
    HelpItem it;
    auto sp = line.find(" (");
    if (sp == std::string_view::npos) {
        it.name = line;
        return it;
    }
    it.name = line.substr(0, sp);
    auto t = line.substr(sp + 2);
    if (!t.empty() && t.back() == ')') t.remove_suffix(1);
    it.tags = t;
    return it;
}

constexpr std::string_view kX86HwcapNames[] = {"sse2", "x86_64", "avx512_1"};

}  // namespace

// (ld.so --list-diagnostics prints the real value, dl_dst_lib.)
std::string dst_lib_of(const std::vector<std::string>& system_dirs) {
    if (system_dirs.empty()) return {};
    std::string_view first = system_dirs.front();
    while (first.starts_with('/')) first.remove_prefix(1);
    while (first.ends_with('/')) first.remove_suffix(1);
    return std::string(first);
}

int x86_hwcap_bit(std::string_view name) {
    for (int i = 0; i < 3; ++i)
        if (kX86HwcapNames[i] == name) return i;
    return -1;
}

LoaderConfig assemble_config(std::vector<std::string> system_dirs, std::uint32_t isa_levels,
                             std::optional<std::string> platform, std::uint64_t hwcap_searched) {
    LoaderConfig cfg;
    cfg.system_dirs = std::move(system_dirs);
    cfg.dst_lib = dst_lib_of(cfg.system_dirs);
    cfg.isa_levels = isa_levels | 1u;
    // Built-in glibc-hwcaps names, best first; the levels are cumulative.
    if (isa_levels & 8u) cfg.hwcaps_active.emplace_back("x86-64-v4");
    if (isa_levels & 4u) cfg.hwcaps_active.emplace_back("x86-64-v3");
    if (isa_levels & 2u) cfg.hwcaps_active.emplace_back("x86-64-v2");
    cfg.hwcap_searched = hwcap_searched;
    // Legacy strings (2.36): hwcap names in ascending bit order, the
    // platform, then "tls".
    std::vector<std::string> legacy;
    for (std::size_t bit = 0; bit < std::size(kX86HwcapNames); ++bit)
        if (hwcap_searched & (std::uint64_t{1} << bit)) legacy.emplace_back(kX86HwcapNames[bit]);
    if (platform) legacy.push_back(*platform);
    legacy.emplace_back("tls");
    cfg.platform = std::move(platform);
    cfg.subdirs = make_subdirs(cfg.hwcaps_active, legacy);
    return cfg;
}

std::vector<std::string> make_subdirs(const std::vector<std::string>& hwcaps_active,
                                      const std::vector<std::string>& legacy) {
    std::vector<std::string> out;
    for (const auto& h : hwcaps_active) out.push_back("glibc-hwcaps/" + h + "/");
    // Power set from the full combination down to the empty one; within a
    // combination the highest index comes first (glibc's _dl_important_hwcaps).
    std::size_t k = legacy.size();
    if (k > 16) k = 16;  // glibc refuses absurd counts; so do we
    for (std::size_t m = (std::size_t{1} << k); m-- > 0;) {
        std::string s;
        for (std::size_t j = k; j-- > 0;)
            if (m & (std::size_t{1} << j)) s += legacy[j] + "/";
        out.push_back(std::move(s));
    }
    return out;
}

std::optional<LoaderConfig> parse_ld_so_help(std::string_view text, std::string* error) {
    enum class Section { none, search, hwcaps, legacy } sec = Section::none;
    LoaderConfig cfg;
    bool saw_search = false;
    bool saw_legacy = false;
    std::optional<std::string> platform;
    std::vector<std::pair<int, std::string>> hwcap_bits;  // searched legacy hwcaps
    static constexpr std::uint32_t kLevelBit[] = {8, 4, 2};  // v4, v3, v2
    for (auto line : lines_of(text)) {
        if (line.starts_with("Shared library search path:")) {
            sec = Section::search;
            saw_search = true;
            continue;
        }
        if (line.starts_with("Subdirectories of glibc-hwcaps directories")) {
            sec = Section::hwcaps;
            continue;
        }
        if (line.starts_with("Legacy HWCAP subdirectories")) {
            sec = Section::legacy;
            saw_legacy = true;
            continue;
        }
        if (!line.starts_with("  ")) {
            if (!line.empty()) sec = Section::none;
            continue;
        }
        auto it = parse_item(line);
        switch (sec) {
            case Section::search:
                // The system list is the last run of "system search path"
                // entries: an LD_LIBRARY_PATH entry that is also a system
                // directory carries that label too, ahead of the cache line.
                if (it.tags == "system search path") {
                    std::string d(it.name);
                    if (d.empty() || d.back() != '/') d += '/';
                    cfg.system_dirs.push_back(std::move(d));
                } else {
                    cfg.system_dirs.clear();
                }
                break;
            case Section::hwcaps:
                if (it.has("searched")) cfg.hwcaps_active.emplace_back(it.name);
                if (it.has("supported")) {
                    if (it.name == "x86-64-v4") cfg.isa_levels |= kLevelBit[0];
                    if (it.name == "x86-64-v3") cfg.isa_levels |= kLevelBit[1];
                    if (it.name == "x86-64-v2") cfg.isa_levels |= kLevelBit[2];
                }
                break;
            case Section::legacy:
                if (it.has("AT_PLATFORM")) {
                    platform = std::string(it.name);
                } else if (it.name == "tls") {
                    // always last in the list of strings
                } else if (it.has("searched")) {
                    int bit = x86_hwcap_bit(it.name);
                    hwcap_bits.emplace_back(bit, std::string(it.name));
                    if (bit >= 0) cfg.hwcap_searched |= std::uint64_t{1} << bit;
                }
                break;
            case Section::none: break;
        }
    }
    if (!saw_search || cfg.system_dirs.empty()) {
        if (error) *error = "no system search path in the loader's --help output";
        return std::nullopt;
    }
    cfg.platform = platform;
    cfg.dst_lib = dst_lib_of(cfg.system_dirs);

    std::vector<std::string> legacy;
    if (saw_legacy) {
        // --help lists hwcap bits from bit 63 down; the search uses ascending order.
        for (auto it = hwcap_bits.rbegin(); it != hwcap_bits.rend(); ++it) legacy.push_back(it->second);
        if (platform) legacy.push_back(*platform);
        legacy.push_back("tls");
    }
    cfg.subdirs = make_subdirs(cfg.hwcaps_active, legacy);
    return cfg;
}

namespace {

// The stdout of `RTLD --help`, or nullopt.
std::optional<std::string> run_help(const std::string& rtld, std::string* error) {
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
    std::vector<std::string> keep;
    for (char** e = environ; e && *e; ++e) {
        std::string_view v(*e);
        if (v.starts_with("GLIBC_TUNABLES=") || v.starts_with("LD_HWCAP_MASK=")) keep.emplace_back(v);
    }
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
std::string cache_key(const std::string& rtld) {
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
    for (const char* v : {"GLIBC_TUNABLES", "LD_HWCAP_MASK"}) {
        const char* x = std::getenv(v);
        mix_str(x ? std::string("=") + x : std::string("unset"));
    }
    unsigned regs[4] = {};
    for (unsigned leaf : {0u, 1u, 7u, 0x80000001u}) {
        if (__get_cpuid_count(leaf, 0, &regs[0], &regs[1], &regs[2], &regs[3])) mix(regs, sizeof regs);
    }
    if (__get_cpuid(1, &regs[0], &regs[1], &regs[2], &regs[3]) && (regs[2] & bit_OSXSAVE)) {
        unsigned lo, hi;
        __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));  // the OS-enabled register state
        mix(&lo, sizeof lo);
        mix(&hi, sizeof hi);
    }
    std::ifstream boot("/proc/sys/kernel/random/boot_id");
    std::string id;
    std::getline(boot, id);
    mix_str(id);
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
    return hex;
}

}  // namespace

std::optional<LoaderConfig> query_running_loader(const std::string& rtld, std::string* error) {
    auto out = run_help(rtld, error);
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

std::optional<LoaderConfig> query_loader_cached(const std::string& rtld, const std::string& dir, std::string* error) {
    if (dir.empty()) return query_running_loader(rtld, error);
    std::string path = dir + "/loader-" + cache_key(rtld) + ".txt";
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
    auto out = run_help(rtld, error);
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

}  // namespace ldshim::loader
