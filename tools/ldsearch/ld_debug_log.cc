#include "tools/ldsearch/ld_debug_log.h"

#include <algorithm>
#include <cstdlib>
#include <set>

namespace ldsearch {

namespace {

bool starts(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// "NAME [NS];  needed by X [NS]" or "...;  dynamically loaded by X [NS]"
// (the payload after "file=").
bool parse_file_line(std::string_view p, LoggedLookup& out) {
    auto br = p.find(" [");
    if (br == std::string_view::npos) return false;
    out.name = std::string(p.substr(0, br));
    auto close = p.find("];", br);
    if (close == std::string_view::npos) return false;
    std::string ns(p.substr(br + 2, close - br - 2));
    char* end = nullptr;
    out.ns = std::strtoul(ns.c_str(), &end, 10);
    if (ns.empty() || *end) return false;
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

}  // namespace

LogParse parse_ld_debug_log(std::string_view text) {
    LogParse r;
    LoggedProcess proc;
    LoggedProgram prog;
    bool started = false;   // past "transferring control"
    bool have_prog = false;
    LoggedLookup* open = nullptr;  // the lookup search lines belong to
    // Names the program's objects go by ("calling init:" paths, files tried,
    // the program): a "needed by" someone else after "transferring control"
    // is a new program exec'd in the same process.
    std::set<std::string, std::less<>> known;
    std::size_t lineno = 0;
    auto fail = [&](const std::string& why) {
        r.error = "line " + std::to_string(lineno) + ": " + why;
        r.process.reset();
        return r;
    };
    auto finish_program = [&] {
        if (have_prog) proc.programs.push_back(std::move(prog));
        prog = LoggedProgram{};
        have_prog = false;
        started = false;
        open = nullptr;
        known.clear();
    };
    std::size_t pos = 0;
    while (pos < text.size()) {
        std::size_t eol = text.find('\n', pos);
        std::string_view line = text.substr(pos, eol == std::string_view::npos ? std::string_view::npos : eol - pos);
        pos = eol == std::string_view::npos ? text.size() : eol + 1;
        ++lineno;
        if (line.empty()) continue;
        // "     12345:\tpayload"
        std::size_t i = 0;
        while (i < line.size() && line[i] == ' ') ++i;
        std::size_t digits = i;
        while (i < line.size() && line[i] >= '0' && line[i] <= '9') ++i;
        if (i == digits || i >= line.size() || line[i] != ':')
            return fail("not a loader debug line (\"PID:<TAB>...\")");
        long pid = std::strtol(std::string(line.substr(digits, i - digits)).c_str(), nullptr, 10);
        if (proc.pid == 0) proc.pid = pid;
        // A child forked without exec writes into its parent's file (the
        // descriptor is inherited) with its own id: same image, same timeline.
        if (pid != proc.pid && std::find(proc.forked.begin(), proc.forked.end(), pid) == proc.forked.end())
            proc.forked.push_back(pid);
        std::string_view p = line.substr(i + 1);
        if (!p.empty() && p.front() == '\t') p.remove_prefix(1);
        if (p.empty()) {
            open = nullptr;  // the empty line that closes a search
            continue;
        }
        if (starts(p, "file=")) {
            LoggedLookup l;
            if (!parse_file_line(p.substr(5), l)) {
                // "file=X [0];  generating link map" and friends: not a lookup.
                if (p.find(";  generating link map") != std::string_view::npos ||
                    p.find("  dynamic: ") != std::string_view::npos || p.find("  entry: ") != std::string_view::npos ||
                    p.find("  phdr: ") != std::string_view::npos)
                    continue;
                return fail("unreadable file= line");
            }
            if (started && !l.dynamic && !known.count(l.requester)) finish_program();  // exec
            if (!have_prog) {
                have_prog = true;
                prog.argv0 = l.requester;  // the first lookup is for the program
                known.insert(l.requester);
            }
            if (l.name.find('/') != std::string::npos) known.insert(l.name);
            auto& list = started ? prog.later : prog.startup;
            list.push_back(std::move(l));
            open = &list.back();
            continue;
        }
        bool search = starts(p, "find library=") || starts(p, " search path=") || starts(p, "  trying file=") ||
                      starts(p, " search cache=");
        if (search) {
            if (starts(p, "find library=")) {
                if (p.find(" [") == std::string_view::npos || p.find("]; searching") == std::string_view::npos)
                    return fail("malformed find library line");
                // Preloads have no file= line before them.
                if (!open || !open->lines.empty()) {
                    if (!have_prog) return fail("a search before any program");
                    auto& list = started ? prog.later : prog.startup;
                    LoggedLookup l;
                    l.name = std::string(p.substr(13, p.find(" [") - 13));
                    l.requester = prog.argv0;
                    list.push_back(std::move(l));
                    open = &list.back();
                }
            } else if (!open || open->lines.empty()) {
                return fail("search line outside a search");
            }
            if (starts(p, "  trying file=")) known.insert(std::string(p.substr(14)));
            open->lines.emplace_back(p);
            continue;
        }
        if (starts(p, "initialize program: ")) {
            if (!have_prog) {
                have_prog = true;
                prog.argv0 = std::string(p.substr(20));
            }
            continue;
        }
        if (starts(p, "transferring control: ")) {
            if (!have_prog) {
                have_prog = true;
                prog.argv0 = std::string(p.substr(22));
            }
            started = true;
            open = nullptr;
            continue;
        }
        // A new program in the same process: exec.  Its first lines are
        // "file=... needed by ARGV0" again, after our "transferring control".
        if (starts(p, "calling init: ")) {
            known.insert(std::string(p.substr(14)));
            continue;
        }
        if (starts(p, "calling fini:")) continue;
        // Other categories (bindings, symbols, reloc, ...) are not ours.
    }
    finish_program();
    r.process = std::move(proc);
    return r;
}

}  // namespace ldsearch
