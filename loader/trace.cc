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

std::optional<std::string> ld_debug_payload(const TraceEvent& e) {
    using K = TraceEvent::Kind;
    switch (e.kind) {
        case K::find_library: return "find library=" + e.text + " [" + std::to_string(e.ns) + "]; searching";
        case K::search_path: {
            std::string s = " search path=" + e.text + "\t\t(" + label_text(e.label);
            if (e.where) s += " from file " + *e.where;
            return s + ")";
        }
        case K::trying: return "  trying file=" + e.text;
        case K::search_cache: return " search cache=" + e.text;
        case K::end_search: return std::string();
        case K::aux_empty_dst:
            return "cannot load auxiliary `" + e.text + "' because of empty dynamic string token substitution";
        case K::rejected:
        case K::missed:
        case K::skipped:
        case K::result: return std::nullopt;
    }
    return std::nullopt;
}

bool is_search_line(std::string_view p) {
    return p.starts_with("find library=") || p.starts_with(" search path=") || p.starts_with("  trying file=") ||
           p.starts_with(" search cache=");
}

void LdDebugPrinter::event(const TraceEvent& e) {
    using K = TraceEvent::Kind;
    // The search lines are written directly; the rest goes through the payload.
    if (e.kind == K::trying || e.kind == K::find_library || e.kind == K::search_cache) {
        std::fputs(prefix_.c_str(), out_);
        if (e.kind == K::trying) {
            std::fputs("  trying file=", out_);
            std::fwrite(e.text.data(), 1, e.text.size(), out_);
        } else if (e.kind == K::search_cache) {
            std::fputs(" search cache=", out_);
            std::fwrite(e.text.data(), 1, e.text.size(), out_);
        } else {
            std::fprintf(out_, "find library=%s [%u]; searching", e.text.c_str(), e.ns);
        }
        std::fputc('\n', out_);
        return;
    }
    auto p = ld_debug_payload(e);
    if (!p || (only_ && !is_search_line(*p))) return;
    std::fputs(prefix_.c_str(), out_);
    std::fwrite(p->data(), 1, p->size(), out_);
    std::fputc('\n', out_);
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
