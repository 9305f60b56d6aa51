#include "report.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

using namespace ldshim::loader;
using nlohmann::json;

namespace ldsearch {

bool want_colors(const std::string& when, std::FILE* out) {
    if (when == "always") return true;
    if (when == "never") return false;
    const char* no = std::getenv("NO_COLOR");
    if (no && *no) return false;
    const char* term = std::getenv("TERM");
    if (term && std::strcmp(term, "dumb") == 0) return false;
    return isatty(fileno(out)) != 0;
}

namespace {

// Past this depth the drawing stops indenting (a 10,000-deep chain would
// otherwise print lines of 40,000 characters) and says the depth instead.
constexpr std::size_t kMaxIndent = 64;

void print_node(std::FILE* out, const Engine& e, const DepNode& n, const std::string& prefix, bool last,
                const std::string& argv0, const Colors& c, std::size_t depth) {
    std::string branch = last ? "└── " : "├── ";
    std::fprintf(out, "%s%s", prefix.c_str(), branch.c_str());
    if (depth > kMaxIndent) std::fprintf(out, "%s(depth %zu)%s ", c.dim(), depth, c.off());
    if (n.how == DepNode::How::not_found) {
        std::fprintf(out, "%s%s not found%s\n", c.bad(), n.name.c_str(), c.off());
    } else {
        std::string path = object_display(e, n.object, argv0);
        bool repeat = n.how == DepNode::How::already_loaded || n.how == DepNode::How::soname_match;
        std::fprintf(out, "%s%s%s", repeat ? c.dim() : c.name(), n.name.c_str(), c.off());
        if (path != n.name) std::fprintf(out, " => %s%s%s", repeat ? c.dim() : c.path(), path.c_str(), c.off());
        std::fprintf(out, " %s[%s]%s\n", repeat ? c.dim() : c.how(), how_found(e, n).c_str(), c.off());
    }
    std::string inner = depth >= kMaxIndent ? prefix : prefix + (last ? "    " : "│   ");
    for (std::size_t i = 0; i < n.children.size(); ++i)
        print_node(out, e, n.children[i], inner, i + 1 == n.children.size(), argv0, c, depth + 1);
}

json node_json(const Engine& e, const DepNode& n, const std::string& argv0) {
    json j;
    j["name"] = n.name;
    j["path"] = n.object >= 0 ? json(object_display(e, n.object, argv0)) : json(nullptr);
    j["how"] = how_key(e, n);
    j["how_text"] = how_found(e, n);
    if (n.object >= 0 && n.how == DepNode::How::found) {
        const Object& o = e.objects()[static_cast<std::size_t>(n.object)];
        if (o.found_via >= 0 && (o.found_by == Source::rpath || o.found_by == Source::runpath))
            j["via"] = object_display(e, o.found_via, argv0);
        if (o.facts.soname) j["soname"] = *o.facts.soname;
    }
    json kids = json::array();
    for (const auto& c : n.children) kids.push_back(node_json(e, c, argv0));
    j["children"] = std::move(kids);
    return j;
}

const char* label_key(Label l) {
    switch (l) {
        case Label::system: return "system";
        case Label::rpath: return "RPATH";
        case Label::runpath: return "RUNPATH";
        case Label::ld_library_path: return "LD_LIBRARY_PATH";
        case Label::library_path_option: return "--library-path";
    }
    return "system";
}

}  // namespace

void print_tree(std::FILE* out, const Engine& e, const DepNode& root, const std::string& argv0, const Colors& c) {
    std::fprintf(out, "%s%s%s\n", c.name(), argv0.c_str(), c.off());
    for (std::size_t i = 0; i < root.children.size(); ++i)
        print_node(out, e, root.children[i], "", i + 1 == root.children.size(), argv0, c, 1);
}

json tree_json(const Engine& e, const DepNode& root, const std::string& argv0) {
    json j = node_json(e, root, argv0);
    j["name"] = argv0;
    return j;
}

json searches_json(const std::vector<TraceEvent>& events) {
    using K = TraceEvent::Kind;
    json out = json::array();
    json cur;
    bool open = false;
    auto close = [&] {
        if (open) out.push_back(std::move(cur));
        cur = json();
        open = false;
    };
    for (const auto& ev : events) {
        switch (ev.kind) {
            case K::find_library:
                close();
                cur["name"] = ev.text;
                cur["namespace"] = ev.ns;
                cur["lines"] = json::array();
                cur["steps"] = json::array();
                cur["result"] = {{"status", "not_found"}};
                open = true;
                break;
            case K::search_path: {
                if (!open) break;
                json dirs = json::array();
                for (std::size_t a = 0; a <= ev.text.size();) {
                    std::size_t b = ev.text.find(':', a);
                    if (b == std::string::npos) b = ev.text.size();
                    dirs.push_back(ev.text.substr(a, b - a));
                    a = b + 1;
                }
                json step = {{"kind", "search_path"}, {"label", label_key(ev.label)}, {"dirs", std::move(dirs)}};
                if (ev.where) step["from"] = *ev.where;
                cur["steps"].push_back(std::move(step));
                break;
            }
            case K::trying:
                if (open) cur["steps"].push_back({{"kind", "trying"}, {"path", ev.text}});
                break;
            case K::search_cache:
                if (open) cur["steps"].push_back({{"kind", "search_cache"}, {"cache", ev.text}});
                break;
            case K::rejected:
                if (open) cur["steps"].push_back({{"kind", "rejected"}, {"path", ev.text}, {"why", ev.detail}});
                break;
            case K::result:
                if (open) {
                    cur["result"] = {{"status", ev.source == Source::already_loaded || ev.source == Source::same_file
                                                    ? "already_loaded"
                                                    : "found"},
                                     {"path", ev.text},
                                     {"source", source_text(ev.source)}};
                    close();
                }
                break;
            case K::end_search:
            case K::aux_empty_dst:
            case K::candidate_failed:  // in "lines" (glibc 2.43); "rejected" and "missed" say why
            case K::refused_not_suid:
            case K::missed:
            case K::skipped: break;
        }
        if (open) {
            if (auto p = ld_debug_payload(ev); p && is_search_line(*p)) cur["lines"].push_back(*p);
        }
    }
    close();
    return out;
}

}  // namespace ldsearch
