#include "tools/ldsearch/ld_debug_log.h"

#include "loader/trace.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <set>

namespace ldsearch {

namespace {

bool starts(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// The namespace number between "[" and "]": decimal digits, nothing else.
bool parse_ns(std::string_view digits, unsigned long& ns) {
    std::string s(digits);
    char* end = nullptr;
    ns = std::strtoul(s.c_str(), &end, 10);
    return !s.empty() && !*end;
}

// "NAME [NS];  needed by X [NS]" or "...;  dynamically loaded by X [NS]"
// (the payload after "file=").
bool parse_file_line(std::string_view p, LoggedLookup& out) {
    auto br = p.find(" [");
    if (br == std::string_view::npos) return false;
    out.name = std::string(p.substr(0, br));
    auto close = p.find("];", br);
    if (close == std::string_view::npos) return false;
    if (!parse_ns(p.substr(br + 2, close - br - 2), out.ns)) return false;
    std::string_view rest = p.substr(close + 2);
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    std::string_view by;
    if (starts(rest, "needed by ")) {
        by = rest.substr(10);
    } else if (starts(rest, "dynamically loaded by ")) {
        by = rest.substr(22);
        out.dynamic = true;
    } else {
        return false;
    }
    auto last = by.rfind(" [");
    if (last == std::string_view::npos || by.back() != ']') return false;
    out.requester = std::string(by.substr(0, last));
    return true;
}

// "     12345:\tpayload": the process id and the payload (without its tab);
// false when the line has no "PID:".
bool split_debug_line(std::string_view line, long& pid, std::string_view& payload) {
    std::size_t i = 0;
    while (i < line.size() && line[i] == ' ') ++i;
    std::size_t digits = i;
    while (i < line.size() && line[i] >= '0' && line[i] <= '9') ++i;
    if (i == digits || i >= line.size() || line[i] != ':') return false;
    pid = std::strtol(std::string(line.substr(digits, i - digits)).c_str(), nullptr, 10);
    payload = line.substr(i + 1);
    if (!payload.empty() && payload.front() == '\t') payload.remove_prefix(1);
    return true;
}

constexpr std::string_view kMapping = ";  generating link map";

// A file= line that is not a lookup: a symbol binding that made X a
// dependency of Y, "file=X [0];  needed by Y [0] (relocation dependency)"
// (dl-lookup.c).
bool is_file_note(std::string_view p) { return p.ends_with(" (relocation dependency)"); }

// "file=X [NS];  generating link map" (dl-load.c): the file found for the
// lookup of X is being mapped as a new object.  Returns X.
std::optional<std::string_view> parse_mapping(std::string_view p) {
    if (!starts(p, "file=") || !p.ends_with(kMapping)) return std::nullopt;
    p = p.substr(5, p.size() - 5 - kMapping.size());
    auto br = p.rfind(" [");
    if (br == std::string_view::npos) return std::nullopt;
    return p.substr(0, br);
}

// "file=X [NS];  destroying link map" (dl-close.c): dlclose unloaded X.
bool parse_unload(std::string_view p, LoggedLookup& out) {
    constexpr std::string_view kTail = ";  destroying link map";
    if (!starts(p, "file=") || !p.ends_with(kTail)) return false;
    p = p.substr(5, p.size() - 5 - kTail.size());
    auto br = p.rfind(" [");
    if (br == std::string_view::npos || p.back() != ']') return false;
    out.name = std::string(p.substr(0, br));
    out.unload = true;
    return parse_ns(p.substr(br + 2, p.size() - br - 3), out.ns);
}

using ldshim::loader::is_candidate_note;
using ldshim::loader::is_search_line;

// The log read so far, one line at a time.  The take_*() that can fail return
// nullptr, or why the line cannot be part of such a log.
struct LogReader {
    LoggedProcess proc;
    LoggedProgram prog;
    bool started = false;  // past "transferring control"
    bool have_prog = false;
    LoggedLookup* open = nullptr;  // the lookup search lines belong to
    LoggedLookup* last = nullptr;  // the lookup opened last (its mapping follows it)
    // Names the program's objects go by ("calling init:" paths, files tried,
    // the program): a "needed by" someone else after "transferring control"
    // is a new program exec'd in the same process.
    std::set<std::string, std::less<>> known;
    // Objects mapped under a name with a DST: the loader names such an object
    // by the expansion, which no line states before a "needed by" does, so
    // that many unknown requesters are these objects, not an exec.
    std::size_t unnamed_objects = 0;

    bool any_loader_line = false;

    // nullptr, or why the line was skipped.
    const char* take_line(std::string_view line) {
        if (line.empty()) return nullptr;
        long pid = 0;
        std::string_view p;
        if (!split_debug_line(line, pid, p)) return "not a loader debug line (\"PID:<TAB>...\")";
        any_loader_line = true;
        note_pid(pid);
        if (p.empty()) {
            open = nullptr;  // the empty line that closes a search
            return nullptr;
        }
        if (starts(p, "file=")) return take_file_line(p);
        if (is_search_line(p)) return take_search_line(p);
        take_progress_line(p);
        return nullptr;
    }

    LoggedProcess finish() {
        finish_program();
        return std::move(proc);
    }

    // A child forked without exec writes into its parent's file (the
    // descriptor is inherited) with its own id: same image, same timeline.
    void note_pid(long pid) {
        if (proc.pid == 0) proc.pid = pid;
        if (pid != proc.pid && std::find(proc.forked.begin(), proc.forked.end(), pid) == proc.forked.end())
            proc.forked.push_back(pid);
    }

    void finish_program() {
        if (have_prog) proc.programs.push_back(std::move(prog));
        prog = LoggedProgram{};
        have_prog = false;
        started = false;
        open = nullptr;
        last = nullptr;
        unnamed_objects = 0;
        known.clear();
    }

    void name_program(std::string_view argv0) {
        if (have_prog) return;
        have_prog = true;
        prog.argv0 = std::string(argv0);
    }

    // Appends a lookup to the program's current phase; its search lines follow.
    void open_lookup(LoggedLookup l) {
        auto& list = started ? prog.later : prog.startup;
        list.push_back(std::move(l));
        open = last = &list.back();
    }

    // "file=NAME [NS];  needed by X [NS]" (or "dynamically loaded by"): a
    // lookup; "file=NAME [NS];  destroying link map": an unload.
    const char* take_file_line(std::string_view p) {
        LoggedLookup l;
        if (parse_unload(p, l)) {
            if (started) prog.later.push_back(std::move(l));  // at startup: a preload that failed
            open = last = nullptr;
            unnamed_objects = 0;
            return nullptr;
        }
        if (auto mapped = parse_mapping(p)) {
            take_mapping(*mapped);
            return nullptr;
        }
        if (is_file_note(p)) return nullptr;
        if (!parse_file_line(p.substr(5), l)) return "a file= line of an unknown form";
        // An LD_AUDIT module named with a DST ($PLATFORM: --diff's own, see
        // env_capture.cc) is announced before the program, in a namespace
        // of its own: neither the program nor a lookup of it.
        if (!have_prog && l.ns != 0) return nullptr;
        if (l.dynamic) unnamed_objects = 0;
        if (started && !l.dynamic && !known.count(l.requester)) {
            if (unnamed_objects > 0) {
                --unnamed_objects;
                known.insert(l.requester);
            } else {
                finish_program();  // exec
            }
        }
        if (!have_prog) {
            name_program(l.requester);  // the first lookup is for the program
            known.insert(l.requester);
        }
        if (l.name.find('/') != std::string::npos) known.insert(l.name);
        open_lookup(std::move(l));
        return nullptr;
    }

    // The lookup just made found a file that becomes a new object.
    void take_mapping(std::string_view name) {
        if (last && last->name == name) last->mapped = true;
        if (started && name.find('$') != std::string_view::npos) ++unnamed_objects;
        open = nullptr;
    }

    // "find library=NAME [NS]; searching": continues the lookup its file=
    // line opened, or starts one of its own.
    const char* take_find_library_line(std::string_view p) {
        if (p.find(" [") == std::string_view::npos || p.find("]; searching") == std::string_view::npos)
            return "malformed find library line";
        if (open && open->lines.empty()) return nullptr;
        // Preloads have no file= line before them: the search is the lookup.
        if (!have_prog) return "a search before any program";
        LoggedLookup l;
        l.name = std::string(p.substr(13, p.find(" [") - 13));
        l.requester = prog.argv0;
        open_lookup(std::move(l));
        return nullptr;
    }

    // "find library=", " search path=", "  trying file=", " search cache=".
    const char* take_search_line(std::string_view p) {
        if (starts(p, "find library=")) {
            if (const char* why = take_find_library_line(p)) return why;
        } else if (!open || (open->lines.empty() && !is_candidate_note(p))) {
            return "search line outside a search";
        }
        if (starts(p, "  trying file=")) known.insert(std::string(p.substr(14)));
        open->lines.emplace_back(p);
        return nullptr;
    }

    // The program's own milestones; lines of other categories (bindings,
    // symbols, reloc, "calling fini:", ...) are not ours.
    void take_progress_line(std::string_view p) {
        if (starts(p, "initialize program: ")) {
            name_program(p.substr(20));
        } else if (starts(p, "transferring control: ")) {
            name_program(p.substr(22));
            started = true;
            open = nullptr;
        } else if (starts(p, "calling init: ")) {
            known.insert(std::string(p.substr(14)));
        } else if (starts(p, "opening file=")) {
            unnamed_objects = 0;  // the dlopen returned: no more of its objects
        }
    }
};

}  // namespace

LogParse parse_ld_debug_log(std::string_view text) {
    LogParse r;
    LogReader reader;
    std::size_t lineno = 0;
    std::size_t pos = 0;
    while (pos < text.size()) {
        std::size_t eol = text.find('\n', pos);
        std::string_view line = text.substr(pos, eol == std::string_view::npos ? std::string_view::npos : eol - pos);
        pos = eol == std::string_view::npos ? text.size() : eol + 1;
        ++lineno;
        if (const char* why = reader.take_line(line)) {
            if (r.warnings.size() < LogParse::kMaxWarnings)
                r.warnings.push_back("line " + std::to_string(lineno) + ": " + why + ", skipped");
            ++r.unread;
        }
    }
    if (lineno > 0 && !reader.any_loader_line) {
        r.error = "no line of the loader's debug output (\"PID:<TAB>...\")";
        return r;
    }
    r.process = reader.finish();
    return r;
}

}  // namespace ldsearch
