// ldsearch's command line: the modes, the options and their parsing.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ldsearch {

// Exit statuses (documented in --help and docs/ldsearch.md).
enum Exit : int {
    kOk = 0,
    kLoadFailed = 1,  // the program would not start, or a dlopen would fail
    kUsage = 2,
    kBadInput = 3,     // PROGRAM missing, unreadable, not ELF or not for this loader
    kLoaderQuery = 4,  // the loader's configuration could not be read
};

enum class Mode { search, tree, why, diff, replay, check };

// --dlopen, --dlopen-noload, --dlmopen and --from, kept in command-line order.
struct Op {
    enum class Kind { from, dlopen, noload, dlmopen } kind;
    std::string arg;
};

struct Options {
    Mode mode = Mode::search;
    std::string program;
    std::string why_name;               // why NAME
    std::vector<std::string> operands;  // --diff COMMAND [ARG]..., --replay LOG..., check PATH...
    unsigned jobs = 0;                  // check --jobs (0: one per CPU)
    bool keep = false;                  // --diff --keep
    bool json = false;
    std::string color = "auto";
    std::vector<Op> ops;
    std::optional<std::string> cache_file, ld_so, library_path, inhibit_rpath, platform, hwcaps, dst_lib, root;
    std::optional<bool> secure;
    bool keep_going = false, inhibit_cache = false, all_lines = false, no_cache = false;
    std::vector<std::pair<std::string, std::optional<std::string>>> env_over;  // --env; nullopt unsets
};

// Options to run with, or the end of the run: --help or --version (`out`,
// for stdout) or a usage error (`error`), and the exit status.
struct ParseResult {
    std::optional<Options> options;
    std::string out;
    std::string error;
    int status = kOk;
};

ParseResult parse_options(int argc, char** argv);

// Prints a usage error with the pointer to --help; returns kUsage.
int usage_error(const std::string& msg);

}  // namespace ldsearch
