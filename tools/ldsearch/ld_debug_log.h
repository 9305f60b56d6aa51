// A parser for the loader's own debug output (LD_DEBUG=libs,files written
// through LD_DEBUG_OUTPUT, one file per process): for each program a process
// ran (exec keeps the file), the search lines of its startup and of each
// later lookup, with the object that asked (from "needed by" / "dynamically
// loaded by").  Pure: text in, structure or a located error out; never
// trusts the input (it is also a fuzz target).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ldsearch {

struct LoggedLookup {
    std::string name;                // what was looked up (for an unload: the object's l_name)
    std::string requester;           // "needed by X" / "dynamically loaded by X"
    bool dynamic = false;            // dlopen (dynamically loaded) rather than DT_NEEDED
    unsigned long ns = 0;            // link-map namespace
    std::vector<std::string> lines;  // its search lines, in order (may be empty)
    bool unload = false;             // "destroying link map": dlclose unloaded `name`; no search
    // "generating link map" followed: the file it found became a new object.
    // A dlopen that found a file not loaded yet without it was RTLD_NOLOAD.
    bool mapped = false;
};

struct LoggedProgram {
    std::string argv0;                  // as the loader names it ("initialize program:")
    std::vector<LoggedLookup> startup;  // before "transferring control"
    std::vector<LoggedLookup> later;    // after it: dlopen and their dependencies
};

struct LoggedProcess {
    long pid = 0;
    std::vector<long> forked;             // children that wrote into this file (fork without exec)
    std::vector<LoggedProgram> programs;  // one per exec
};

struct LogParse {
    std::optional<LoggedProcess> process;
    std::string error;  // why the text is not such a log at all
    // "line N: why" for each line that could not be read, which was skipped
    // (the first kMaxWarnings; `unread` counts them all).
    std::vector<std::string> warnings;
    std::size_t unread = 0;
    static constexpr std::size_t kMaxWarnings = 20;
};

// Parses one LD_DEBUG_OUTPUT file.  It knows every line glibc 2.31 to 2.41
// writes under LD_DEBUG=libs,files and the other categories (from elf/'s
// _dl_debug_printf calls); lines of other categories are ignored.  A line
// it cannot place (not "PID:<TAB>payload", a search line outside a search,
// a file= line of an unknown form) is skipped with a warning; only a text
// with no loader line at all is an error.  Lines of forked children (other
// ids) are taken as the same timeline.
LogParse parse_ld_debug_log(std::string_view text);

}  // namespace ldsearch
