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
    already_loaded,   // matched a loaded object by name or SONAME
    same_file,        // found a file that is an already-loaded object
    slash_name,       // opened directly
    rpath,
    ld_library_path,
    runpath,
    cache,
    system,
};
const char* source_text(Source s);

struct TraceEvent {
    enum class Kind : std::uint8_t {
        find_library,   // text = name, ns
        search_path,    // text = joined dirs, label, where (display name)
        trying,         // text = candidate path
        search_cache,   // text = cache label
        end_search,     // the empty line that closes a search
        aux_empty_dst,  // text = DT_NEEDED string dropped for an empty DST
        // Not printed by LD_DEBUG=libs; for tools that explain a search.
        rejected,       // text = candidate, detail = why
        result,         // text = path or object name, source, owner
    };
    Kind kind;
    std::string text;
    unsigned ns = 0;
    Label label = Label::system;
    std::optional<std::string> where;
    Source source = Source::none;
    std::string detail;
};

class TraceSink {
public:
    virtual ~TraceSink() = default;
    virtual void event(const TraceEvent& e) = 0;
};

// The payload of the LD_DEBUG line for `e` (without the "PID:\t" prefix), or
// nullopt for events glibc does not print.
std::optional<std::string> ld_debug_payload(const TraceEvent& e);

// The four line kinds that ldsearch reproduces.
bool is_search_line(std::string_view payload);

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
};

class TraceRecorder final : public TraceSink {
public:
    void event(const TraceEvent& e) override { events.push_back(e); }
    std::vector<TraceEvent> events;
};

}  // namespace ldshim::loader
