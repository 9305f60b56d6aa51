// Structured events of a search, and the printer that turns them into the
// exact text of glibc's LD_DEBUG=libs.
#pragma once

#include "loader/path_pool.h"

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace ldshim::loader {

// Which list the engine was walking (not necessarily the printed label).
enum class Source : std::uint8_t {
    none,
    already_loaded,  // matched a loaded object by name or SONAME
    same_file,       // found a file that is an already-loaded object
    slash_name,      // opened directly
    rpath,
    ld_library_path,
    runpath,
    cache,
    system,
};
const char* source_text(Source s);

// Why the engine did not look somewhere (TraceEvent::Kind::skipped).  The
// engine reports these at the decision; tools format them and never
// re-derive the rules.
enum class Skip : std::uint8_t {
    none,
    rpath_under_runpath,    // `object`'s RPATH: the requester has a RUNPATH, which turns off the chain
    runpath_not_inherited,  // `object`'s RUNPATH: it serves only that object's own dependencies
    list_dropped,           // `object`'s list (label): all its directories were found missing earlier
    element_dropped,        // an element (text) of `object`'s list (label) that expands to nothing; detail: why
    dir_missing,            // a directory (text) of a list, known not to exist: no longer tried or printed
    library_path_secure,    // LD_LIBRARY_PATH: ignored in secure mode
    cache_secure_preload,   // ld.so.cache: not used for a preload in secure mode
    cache_inhibited,        // ld.so.cache: ld.so --inhibit-cache
    nodeflib,               // the system directories: `object` is linked with -z nodefaultlib
};

struct TraceEvent {
    enum class Kind : std::uint8_t {
        find_library,   // text = name, ns
        search_path,    // text = joined dirs, label, where (display name)
        trying,         // text = candidate path
        search_cache,   // text = cache label
        end_search,     // the empty line that closes a search
        aux_empty_dst,  // text = DT_NEEDED string dropped for an empty DST
        // Printed by glibc 2.43 on: why the candidate just tried failed.
        candidate_failed,  // text = "no such file", "incompatible ELF class" ...
        refused_not_suid,  // text = candidate: a secure preload without set-user-ID
        // Not printed by LD_DEBUG=libs; for tools that explain a search.
        rejected,  // text = candidate, detail = why (it exists, but is not usable)
        missed,    // text = candidate, detail = why it could not be opened
        skipped,   // skip = why, object/label/text = what (see Skip)
        result,    // text = path or object name, source, detail = the name asked for
    };
    Kind kind;
    std::string text;
    unsigned ns = 0;
    Label label = Label::system;
    std::optional<std::string> where;
    Source source = Source::none;
    std::string detail;
    int object = -1;  // the model object a skipped list belongs to
    Skip skip = Skip::none;

    static TraceEvent result(std::string path, unsigned ns, Source source, std::string name);
    static TraceEvent rejected(std::string path, std::string why);
    static TraceEvent missed(std::string path, std::string why);
    static TraceEvent skipped(Skip why, int object, Label list = Label::system, std::string what = {},
                              std::string detail = {});
};

class TraceSink {
public:
    virtual ~TraceSink() = default;
    virtual void event(const TraceEvent& e) = 0;
};

// The payload of the LD_DEBUG line for `e` (without the "PID:\t" prefix), or
// nullopt for events glibc does not print.
std::optional<std::string> ld_debug_payload(const TraceEvent& e);
// The same payload appended to `out`; false (and `out` unchanged) for events
// glibc does not print.
bool append_ld_debug_payload(std::string& out, const TraceEvent& e);

// The line kinds that ldsearch reproduces: the four of every glibc, and the
// notes on a failed candidate of 2.43 on.
bool is_search_line(std::string_view payload);
// glibc 2.43's note on the candidate tried last ("    (no such file)", a
// secure preload refused): it follows a "trying file=" line, or the file=
// line of a path opened without a search.
bool is_candidate_note(std::string_view payload);

// Writes LD_DEBUG-style lines to a FILE.  With `search_lines_only`, only
// find/search path/trying/search cache lines (the differential contract).
class LdDebugPrinter final : public TraceSink {
public:
    LdDebugPrinter(std::FILE* out, bool search_lines_only, std::string prefix = {})
        : out_(out), only_(search_lines_only), prefix_(std::move(prefix)) {}
    void event(const TraceEvent& e) override;

private:
    std::FILE* out_;
    bool only_;
    std::string prefix_;
    std::string line_;
};

class TraceRecorder final : public TraceSink {
public:
    void event(const TraceEvent& e) override { events.push_back(e); }
    std::vector<TraceEvent> events;
};

}  // namespace ldshim::loader
