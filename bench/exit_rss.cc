// exit_rss: runs a program to its exit and prints how much of it was
// resident, read while it is stopped there.
//
//   exit_rss [-o FILE] PROGRAM [ARGS...]
//     prints "RSS HWM" (KiB) on stdout, or into FILE; exits with the
//     program's status
//
// RSS is the Rss of /proc/PID/smaps_rollup, which the kernel counts by
// walking the page tables; HWM is VmHWM from /proc/PID/status, the peak.
// Both are read while the program is stopped at its exit
// (PTRACE_O_TRACEEXIT: its memory is still mapped); nothing is written into
// it (no breakpoint), and only the program itself is counted.
// /usr/bin/time -f %M prints the child's ru_maxrss instead: the largest
// resident set of everything the child ran, before its exec too, from
// counters that Linux 6.2 and later keep per CPU and fold in lazily.  For
// a process that lives a few milliseconds it is not that process's peak.
#include <sys/ptrace.h>
#include <sys/wait.h>

#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace {

// The number after `key` on the first line of /proc/PID/FILE that starts
// with it (KiB for "Rss:" and "VmHWM:"); -1 where there is none.
long field(pid_t pid, const char* file, const char* key) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/" + file);
    std::string line;
    const std::size_t n = std::strlen(key);
    while (std::getline(in, line))
        if (line.compare(0, n, key) == 0) return std::strtol(line.c_str() + n, nullptr, 10);
    return -1;
}

int usage(std::FILE* to, int status) {
    std::fputs(
        "usage: exit_rss [-o FILE] PROGRAM [ARGS...]\n"
        "Runs PROGRAM and prints, in KiB, its resident set at exit (page tables)\n"
        "and its peak (VmHWM), both read while it is stopped at its exit; with -o,\n"
        "into FILE instead of stdout.\n",
        to);
    return status;
}

}  // namespace

int main(int argc, char** argv) {
    int first = 1;
    const char* out_path = nullptr;
    if (argc > 1 && std::strcmp(argv[1], "-o") == 0) {
        out_path = argc > 2 ? argv[2] : nullptr;
        first = 3;
    }
    if (first >= argc) return usage(stderr, 2);
    if (std::strcmp(argv[first], "--help") == 0 || std::strcmp(argv[first], "-h") == 0) return usage(stdout, 0);
    std::FILE* out = out_path ? std::fopen(out_path, "w") : stdout;
    if (!out) {
        std::fprintf(stderr, "exit_rss: %s: %s\n", out_path, std::strerror(errno));
        return 2;
    }
    const pid_t pid = fork();
    if (pid < 0) {
        std::perror("exit_rss: fork");
        return 1;
    }
    if (pid == 0) {
        if (ptrace(PTRACE_TRACEME, 0, nullptr, nullptr) != 0) _exit(126);
        raise(SIGSTOP);  // until the parent has set its options
        execvp(argv[first], argv + first);
        std::fprintf(stderr, "exit_rss: %s: %s\n", argv[first], std::strerror(errno));
        _exit(127);
    }
    long rss = -1, hwm = -1;
    int status = 0;
    bool first_stop = true, exec_seen = false;
    for (;;) {
        if (waitpid(pid, &status, 0) != pid) {
            std::perror("exit_rss: waitpid");
            return 1;
        }
        if (WIFEXITED(status) || WIFSIGNALED(status)) break;
        if (!WIFSTOPPED(status)) continue;
        int deliver = WSTOPSIG(status);
        if (first_stop) {
            first_stop = false;
            ptrace(PTRACE_SETOPTIONS, pid, nullptr, PTRACE_O_TRACEEXEC | PTRACE_O_TRACEEXIT | PTRACE_O_EXITKILL);
            deliver = 0;
        } else if (status >> 8 == (SIGTRAP | (PTRACE_EVENT_EXEC << 8))) {
            exec_seen = true;
            deliver = 0;
        } else if (status >> 8 == (SIGTRAP | (PTRACE_EVENT_EXIT << 8))) {
            if (exec_seen) {  // not the child that failed to exec
                rss = field(pid, "smaps_rollup", "Rss:");
                hwm = field(pid, "status", "VmHWM:");
            }
            deliver = 0;
        }
        ptrace(PTRACE_CONT, pid, nullptr, deliver);
    }
    if (rss >= 0 && hwm >= 0)
        std::fprintf(out, "%ld %ld\n", rss, hwm);
    else if (exec_seen)
        std::fputs("exit_rss: could not read the program's memory at its exit\n", stderr);
    if (out != stdout) std::fclose(out);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}
