#include "loader/trace.h"

namespace ldshim::loader {

const char* source_text(Source s) {
    switch (s) {
        case Source::none: return "none";
        case Source::already_loaded: return "already loaded";
        case Source::same_file: return "same file as a loaded object";
        case Source::slash_name: return "path name";
        case Source::rpath: return "RPATH";
        case Source::ld_library_path: return "LD_LIBRARY_PATH";
        case Source::runpath: return "RUNPATH";
        case Source::cache: return "ld.so.cache";
        case Source::system: return "system search path";
    }
    return "?";
}

bool append_ld_debug_payload(std::string& out, const TraceEvent& e) {
    using K = TraceEvent::Kind;
    switch (e.kind) {
        case K::find_library:
            out.append("find library=").append(e.text).append(" [");
            out.append(std::to_string(e.ns)).append("]; searching");
            return true;
        case K::search_path:
            out.append(" search path=").append(e.text).append("\t\t(").append(label_text(e.label));
            if (e.where) out.append(" from file ").append(*e.where);
            out += ')';
            return true;
        case K::trying: out.append("  trying file=").append(e.text); return true;
        case K::search_cache: out.append(" search cache=").append(e.text); return true;
        case K::end_search: return true;
        case K::aux_empty_dst:
            out.append("cannot load auxiliary `").append(e.text);
            out.append("' because of empty dynamic string token substitution");
            return true;
        case K::candidate_failed: out.append("    (").append(e.text).append(")"); return true;
        case K::refused_not_suid:
            out.append("  refusing to load file=").append(e.text);
            out.append(", the shared object cannot be tested for being SUID or the bit is not set");
            return true;
        case K::rejected:
        case K::missed:
        case K::skipped:
        case K::result: return false;
    }
    return false;
}

std::optional<std::string> ld_debug_payload(const TraceEvent& e) {
    std::string s;
    if (!append_ld_debug_payload(s, e)) return std::nullopt;
    return s;
}

bool is_search_line(std::string_view p) {
    return p.starts_with("find library=") || p.starts_with(" search path=") || p.starts_with("  trying file=") ||
           p.starts_with(" search cache=") || is_candidate_note(p);
}

bool is_candidate_note(std::string_view p) {
    return p.starts_with("    (") || p.starts_with("  refusing to load file=");
}

// One write per line, into a line buffer that is reused: a start-up prints
// hundreds of lines, and stdio calls and a temporary string for each would
// be a large part of ldsearch's work.
void LdDebugPrinter::event(const TraceEvent& e) {
    line_.assign(prefix_);
    if (!append_ld_debug_payload(line_, e)) return;
    if (only_ && !is_search_line(std::string_view(line_).substr(prefix_.size()))) return;
    line_ += '\n';
    std::fwrite(line_.data(), 1, line_.size(), out_);
}

TraceEvent TraceEvent::result(std::string path, unsigned ns, Source source, std::string name) {
    TraceEvent e{Kind::result, std::move(path), ns};
    e.source = source;
    e.detail = std::move(name);
    return e;
}

TraceEvent TraceEvent::rejected(std::string path, std::string why) {
    TraceEvent e{Kind::rejected, std::move(path)};
    e.detail = std::move(why);
    return e;
}

TraceEvent TraceEvent::missed(std::string path, std::string why) {
    TraceEvent e{Kind::missed, std::move(path)};
    e.detail = std::move(why);
    return e;
}

TraceEvent TraceEvent::skipped(Skip why, int object, Label list, std::string what, std::string detail) {
    TraceEvent e{Kind::skipped, std::move(what)};
    e.skip = why;
    e.object = object;
    e.label = list;
    e.detail = std::move(detail);
    return e;
}

}  // namespace ldshim::loader
