// ldshim-hooks: run a command with ldshim's CUDA hooks preloaded and print
// what they did -- one line per slot written, from the hooks' operation log.
//
//   ldshim-hooks [--preload PATH] [--raw] [-o FILE] [--] COMMAND [ARGS...]
//
// Exit status: the command's own (128+N if it died of signal N); 125 if
// ldshim-hooks itself failed; 2 for a usage error.
#include "ldshim_version.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace {

constexpr int kUsage = 2, kSelf = 125;

// The preload as the install lays it out, found from this program's own
// place (/proc/self/exe: links followed), LIBDIR relative to BINDIR, so that
// the release tarball, a moved tree and a package each find their own.
std::string default_preload() {
#ifdef LDSHIM_PRELOAD_ABSOLUTE
    return LDSHIM_PRELOAD_ABSOLUTE;
#else
    std::string rel = LDSHIM_PRELOAD_FROM_BINDIR;
    char buf[4096];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) return rel;
    std::string dir(buf, static_cast<std::size_t>(n));
    dir.resize(dir.rfind('/') == std::string::npos ? 0 : dir.rfind('/'));
    while (rel.starts_with("../")) {
        rel.erase(0, 3);
        auto slash = dir.rfind('/');
        dir.resize(slash == std::string::npos ? 0 : slash);
    }
    return dir + "/" + rel;
#endif
}

void usage(std::FILE* to) {
    std::fprintf(to,
                 "Usage: ldshim-hooks [OPTIONS] [--] COMMAND [ARGS...]\n"
                 "Run COMMAND with libldshim_preload.so and LDSHIM_CUDA_HOOKS=1, then print\n"
                 "the hooks' operation log: every GOT/pointer slot written, restored or not.\n"
                 "\n"
                 "  --preload PATH  the preload library (default: %s,\n"
                 "                  where the install puts it beside this program,\n"
                 "                  or $LDSHIM_PRELOAD)\n"
                 "  --raw           print the log as tab-separated fields\n"
                 "  -o FILE         write the report to FILE instead of standard output\n"
                 "  -h, --help      this text\n"
                 "  --version       the version\n"
                 "\n"
                 "Columns: status (patched, chained, restored, left, failed), object,\n"
                 "symbol, version the import names, slot address, old -> new value,\n"
                 "the function the hook calls, detail.\n"
                 "Exit status: COMMAND's; 125 if ldshim-hooks failed; 2 on a usage error.\n",
                 default_preload().c_str());
}

std::vector<std::string> split(const std::string& line) {
    std::vector<std::string> f;
    std::size_t pos = 0;
    for (;;) {
        std::size_t tab = line.find('\t', pos);
        f.push_back(line.substr(pos, tab == std::string::npos ? std::string::npos : tab - pos));
        if (tab == std::string::npos) return f;
        pos = tab + 1;
    }
}

// The log as an aligned table.
void report(std::istream& in, std::ostream& out, bool raw) {
    std::vector<std::vector<std::string>> rows;
    std::vector<std::string> notes;
    for (std::string line; std::getline(in, line);) {
        if (line.empty()) continue;
        if (line[0] == '#')
            notes.push_back(line);
        else
            rows.push_back(split(line));
    }
    if (raw) {
        for (const auto& r : rows) {
            for (std::size_t i = 0; i < r.size(); ++i) out << (i ? "\t" : "") << r[i];
            out << '\n';
        }
    } else {
        // status object symbol version slot old new target detail
        std::vector<std::string> head = {"STATUS", "OBJECT",     "SYMBOL", "VERSION",
                                         "SLOT",   "OLD -> NEW", "CALLS",  "DETAIL"};
        std::vector<std::vector<std::string>> table = {head};
        for (const auto& r : rows) {
            if (r.size() < 9) continue;
            table.push_back({r[0], r[1], r[2], r[3], r[4], r[5] + " -> " + r[6], r[7], r[8] == "-" ? "" : r[8]});
        }
        std::vector<std::size_t> width(head.size(), 0);
        for (const auto& r : table)
            for (std::size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
        for (const auto& r : table) {
            std::string line;
            for (std::size_t i = 0; i < r.size(); ++i) {
                line += r[i];
                if (i + 1 < r.size()) line += std::string(width[i] - r[i].size() + 2, ' ');
            }
            while (!line.empty() && line.back() == ' ') line.pop_back();
            out << line << '\n';
        }
        std::size_t patched = 0, chained = 0, failed = 0;
        for (const auto& r : rows) {
            patched += r[0] == "patched";
            chained += r[0] == "chained";
            failed += r[0] == "failed";
        }
        out << rows.size() << " operations: " << patched << " patched, " << chained << " chained, " << failed
            << " failed\n";
    }
    for (const auto& n : notes) out << n << '\n';
}

struct Options {
    std::string preload = std::getenv("LDSHIM_PRELOAD") ? std::getenv("LDSHIM_PRELOAD") : default_preload();
    std::string output;  // empty: standard output
    bool raw = false;
    int command = 0;  // COMMAND's index in argv
};

// Reads the options into `o`; the exit status to end with when there is
// nothing to run (--help, --version, a usage error).
std::optional<int> parse_options(int argc, char** argv, Options& o) {
    int i = 1;
    for (; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--") {
            ++i;
            break;
        }
        if (a == "-h" || a == "--help") {
            usage(stdout);
            return 0;
        }
        if (a == "--version") {
            std::printf("ldshim-hooks %s\n", LDSHIM_VERSION_STRING);
            return 0;
        }
        if (a == "--raw") {
            o.raw = true;
        } else if (a == "--preload" || a == "-o") {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "ldshim-hooks: %s needs an argument\n", a.c_str());
                return kUsage;
            }
            (a == "-o" ? o.output : o.preload) = argv[++i];
        } else if (a.size() > 1 && a[0] == '-') {
            std::fprintf(stderr, "ldshim-hooks: unknown option %s (see --help)\n", a.c_str());
            return kUsage;
        } else {
            break;
        }
    }
    if (i >= argc) {
        std::fprintf(stderr, "ldshim-hooks: no command given (see --help)\n");
        return kUsage;
    }
    o.command = i;
    return std::nullopt;
}

// In the child: becomes `command` with the hooks preloaded (ahead of any
// LD_PRELOAD already set) and logging to `log_path`.
[[noreturn]] void exec_with_hooks(const std::string& preload, const char* log_path, char** command) {
    const char* old = std::getenv("LD_PRELOAD");
    std::string lp = preload + (old && *old ? std::string(":") + old : "");
    setenv("LD_PRELOAD", lp.c_str(), 1);
    setenv("LDSHIM_CUDA_HOOKS", "1", 1);
    setenv("LDSHIM_HOOKS_LOG", log_path, 1);
    execvp(command[0], command);
    std::fprintf(stderr, "ldshim-hooks: cannot run %s: %s\n", command[0], std::strerror(errno));
    _exit(127);
}

// Runs `command` with the hooks and waits for it: its exit status in `rc`
// (128+N if it died of signal N), or false, said on stderr, when it could
// not be forked or waited for.
bool run_with_hooks(const std::string& preload, const char* log_path, char** command, int& rc) {
    pid_t pid = fork();
    if (pid < 0) {
        std::fprintf(stderr, "ldshim-hooks: fork: %s\n", std::strerror(errno));
        return false;
    }
    if (pid == 0) exec_with_hooks(preload, log_path, command);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) {
            std::fprintf(stderr, "ldshim-hooks: waitpid: %s\n", std::strerror(errno));
            return false;
        }
    rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return true;
}

// Prints the report of the log at `log_path` (or says on stderr why there is
// none: `rc` 127 was already explained by the child); false, said on stderr,
// when -o FILE cannot be written.
bool print_log(const char* log_path, const Options& o, const char* command, int rc) {
    std::ifstream in(log_path);
    struct stat st {};
    bool have_log = stat(log_path, &st) == 0 && st.st_size > 0;
    std::ofstream file;
    if (!o.output.empty()) {
        file.open(o.output);
        if (!file) {
            std::fprintf(stderr, "ldshim-hooks: cannot write %s\n", o.output.c_str());
            return false;
        }
    }
    std::ostream& out = o.output.empty() ? std::cout : file;
    if (have_log) {
        report(in, out, o.raw);
    } else if (rc != 127) {
        std::fprintf(stderr,
                     "ldshim-hooks: %s left no log (it did not exit normally, is set-id, or "
                     "the hooks could not be installed)\n",
                     command);
    }
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    if (auto done = parse_options(argc, argv, o)) return *done;
    if (access(o.preload.c_str(), R_OK) != 0) {
        std::fprintf(stderr,
                     "ldshim-hooks: cannot read the preload library %s: %s (give its path with --preload PATH)\n",
                     o.preload.c_str(), std::strerror(errno));
        return kSelf;
    }
    char log_path[] = "/tmp/ldshim-hooks-log-XXXXXX";
    int fd = mkstemp(log_path);
    if (fd < 0) {
        std::fprintf(stderr, "ldshim-hooks: cannot create a temporary file: %s\n", std::strerror(errno));
        return kSelf;
    }
    close(fd);
    int rc = 0;
    bool ok = run_with_hooks(o.preload, log_path, argv + o.command, rc) && print_log(log_path, o, argv[o.command], rc);
    unlink(log_path);
    return ok ? rc : kSelf;
}
