// spawn_wall: whole-process wall time of a few commands, interleaved.
//
//   spawn_wall RUNS 'COMMAND A' 'COMMAND B' ... 'BASELINE'
//
// Starts each command in turn (A B ... BASELINE, A B ..., RUNS rounds after
// 10 warm-up rounds), each with its output on /dev/null, and times it from
// posix_spawn to waitpid.  Prints each command's median and 10th/90th
// percentiles, and the ratio of its median to the baseline's (the last
// command).  For programs that run well under a millisecond, where
// farm-bench's pair ratios spread by +-40 %: interleaving keeps a drifting
// machine fair to every command, and a median of hundreds of runs moves by
// about 1 %.  Commands are split on spaces (no shell, no quoting).
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

extern char** environ;

namespace {

struct Command {
    std::string text;
    std::vector<std::string> words;
    std::vector<double> us;
};

// One run's wall time in microseconds, or a negative value if it could not start.
double run_once(Command& c, const posix_spawn_file_actions_t* quiet) {
    std::vector<char*> argv;
    for (auto& w : c.words) argv.push_back(w.data());
    argv.push_back(nullptr);
    auto start = std::chrono::steady_clock::now();
    pid_t pid;
    if (posix_spawn(&pid, argv[0], quiet, nullptr, argv.data(), environ) != 0) return -1;
    int status = 0;
    waitpid(pid, &status, 0);
    std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - start;
    return took.count();
}

double percentile(std::vector<double> v, double p) {
    std::sort(v.begin(), v.end());
    return v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1))];
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: spawn_wall RUNS 'COMMAND' ... 'BASELINE'\n");
        return 2;
    }
    int runs = std::atoi(argv[1]);
    if (runs < 1) {
        std::fprintf(stderr, "spawn_wall: RUNS must be a positive number\n");
        return 2;
    }
    std::vector<Command> cmds;
    for (int i = 2; i < argc; ++i) {
        Command c{argv[i], {}, {}};
        std::istringstream in(c.text);
        for (std::string w; in >> w;) c.words.push_back(w);
        if (c.words.empty()) {
            std::fprintf(stderr, "spawn_wall: empty command\n");
            return 2;
        }
        cmds.push_back(std::move(c));
    }
    posix_spawn_file_actions_t quiet;
    posix_spawn_file_actions_init(&quiet);
    posix_spawn_file_actions_addopen(&quiet, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&quiet, 2, "/dev/null", O_WRONLY, 0);
    for (int round = -10; round < runs; ++round)
        for (auto& c : cmds) {
            double us = run_once(c, &quiet);
            if (us < 0) {
                std::fprintf(stderr, "spawn_wall: cannot start '%s'\n", c.text.c_str());
                return 1;
            }
            if (round >= 0) c.us.push_back(us);
        }
    const double base = percentile(cmds.back().us, 0.5);
    for (const auto& c : cmds) {
        double med = percentile(c.us, 0.5);
        std::printf("%9.1f us  (p10 %7.1f  p90 %7.1f)  %6.3f of baseline  %s\n", med, percentile(c.us, 0.1),
                    percentile(c.us, 0.9), med / base, c.text.c_str());
    }
    return 0;
}
