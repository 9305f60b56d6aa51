// ldsearch's search, tree and why modes (modes.h).
#include "modes.h"

#include "report.h"
#include "session.h"
#include "tools/ldsearch/dep_tree.h"
#include "tools/ldsearch/why.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

using namespace ldshim::loader;

namespace ldsearch {
namespace {

// The JSON document of a run, printed once at the end.
struct JsonOut {
    bool on = false;
    int indent = 2;  // -1: compact (a very deep tree would be quadratic in indentation)
    nlohmann::json doc;
    int print(int status) {
        doc["exit_status"] = status;
        std::printf("%s\n", doc.dump(indent).c_str());
        return status;
    }
};

// The session of this run's one mode.  Never destroyed: the process exits
// right after the mode returns, and taking apart the engine, its objects
// and the files it kept open would cost a search instructions and system
// calls for nothing (docs/performance.md).  Reachable from a static, so that
// leak checkers do not count it.
Session& run_session() {
    static Session* const kept = new Session;
    return *kept;
}

// Sets up the session and starts PROGRAM, then reports what every mode
// reports about startup: in the JSON document, or its warnings on stderr.
int begin(const Options& o, Session& s, JsonOut& json) {
    json.on = o.json;
    if (int status = start_session(o, s); status != kOk) return status;
    const StartResult& sr = s.start;
    if (json.on) {
        json.doc["mode"] = o.mode == Mode::tree ? "tree" : o.mode == Mode::why ? "why" : "search";
        json.doc["program"] = o.program;
        json.doc["secure"] = s.engine_options.secure;
        json.doc["warnings"] = sr.warnings;
        if (!sr.ok) json.doc["error"] = sr.error;
        return kOk;
    }
    for (const auto& w : sr.warnings) {
        std::fflush(stdout);
        std::fprintf(stderr, "%s\n", w.c_str());
    }
    return kOk;
}

// The object a --from names, or -1 after printing why there is none.  A
// name that several loaded objects answer to (copies of one library under
// one SONAME in different directories, or one name asked of both) is
// refused: glibc takes a dlopen's caller from its return address, which a
// shared name cannot stand for, and guessing would search another object's
// RPATH chain.  An l_name or a path names exactly one object.
int from_object(const Engine& e, const std::string& what, const std::string& program) {
    if (what == program) return e.main_object();
    int found = e.find_object(what);
    if (found < 0) {
        std::fprintf(stderr, "ldsearch: --from %s: no such object is loaded\n", what.c_str());
        return -1;
    }
    const auto& objs = e.objects();
    if (objs[static_cast<std::size_t>(found)].name == what || what.find('/') != std::string::npos) return found;
    std::vector<int> answering = e.objects_named(what);
    if (answering.size() < 2) return found;
    std::string list;
    for (int i : answering) list += (list.empty() ? "" : ", ") + object_display(e, i, program);
    std::fprintf(stderr,
                 "ldsearch: --from %s: %zu loaded objects answer to this name (%s); name the caller by its path\n",
                 what.c_str(), answering.size(), list.c_str());
    return -1;
}

// One --dlopen, --dlopen-noload or --dlmopen from `caller`, as JSON; its
// searches are taken from the recorder.
nlohmann::json dlopen_json(const Op& op, int caller, const MapOutcome& r, Session& s, const std::string& program) {
    nlohmann::json d;
    d["name"] = op.arg;
    d["mode"] = op.kind == Op::Kind::noload ? "noload" : op.kind == Op::Kind::dlmopen ? "dlmopen" : "dlopen";
    d["from"] =
        caller == s.engine->main_object() ? program : s.engine->objects()[static_cast<std::size_t>(caller)].name;
    d["searches"] = searches_json(s.recorder.events);
    s.recorder.events.clear();
    if (r.error) d["error"] = r.error->text();
    d["result"] = r.object < 0 ? nlohmann::json(nullptr) : nlohmann::json(object_display(*s.engine, r.object, program));
    return d;
}

// The dlopens of the command line, in order, after startup.
int run_dlopens(const Options& o, Session& s, JsonOut& json) {
    Engine& engine = *s.engine;
    int status = kOk;
    int caller = engine.main_object();
    for (const auto& op : o.ops) {
        if (op.kind == Op::Kind::from) {
            caller = from_object(engine, op.arg, o.program);
            if (caller < 0) return kUsage;
            continue;
        }
        DlopenRequest req;
        req.caller = caller;
        req.name = op.arg;
        req.noload = op.kind == Op::Kind::noload;
        if (op.kind == Op::Kind::dlmopen) req.ns_mode = DlopenRequest::Ns::new_ns;
        MapOutcome r = engine.dlopen(req);
        if (r.error) status = kLoadFailed;
        if (json.on) {
            json.doc["dlopens"].push_back(dlopen_json(op, caller, r, s, o.program));
        } else if (r.error) {
            std::fflush(stdout);
            std::fprintf(stderr, "%s\n", r.error->text().c_str());
        } else if (r.object < 0) {
            std::printf("(not loaded)\n");  // RTLD_NOLOAD miss: dlopen returns NULL without an error
        } else {
            const auto& obj = engine.objects()[static_cast<std::size_t>(r.object)];
            std::printf("%s\n", obj.kind == Object::Kind::main ? o.program.c_str() : obj.name.c_str());
        }
    }
    return json.on ? json.print(status) : status;
}

// The lookup that why explains: who asked, its trace, and how it came about.
struct WhyLookup {
    int requester = -1;
    std::vector<TraceEvent> events;
    std::string context;
};

// The startup lookup of NAME: asked by the first object (load order) that
// needs it, or by the program for a preload.  Leaves l.events empty if
// startup made none.
void startup_lookup(Session& s, const std::string& name, const std::string& program, WhyLookup& l) {
    using K = TraceEvent::Kind;
    Engine& engine = *s.engine;
    const auto& objs = engine.objects();
    for (std::size_t i = 0; i < objs.size() && l.requester < 0; ++i)
        for (const auto& n : objs[i].facts.needed)
            if (n == name) l.requester = static_cast<int>(i);
    if (l.requester < 0) return;
    auto& ev = s.recorder.events;
    std::size_t at = ev.size();
    for (std::size_t i = 0; i < ev.size(); ++i)
        if (ev[i].kind == K::find_library && ev[i].text == name) {
            at = i;
            break;
        }
    if (at < ev.size()) {
        // The search ends with end_search; a result right after it is
        // this search's (a failed one has none).
        std::size_t end = at + 1;
        while (end < ev.size() && ev[end].kind != K::end_search) ++end;
        if (end < ev.size()) ++end;
        if (end < ev.size() && ev[end].kind == K::result && ev[end].detail == name) ++end;
        l.events.assign(ev.begin() + static_cast<long>(at), ev.begin() + static_cast<long>(end));
    } else {
        // Matched silently (already loaded, or a path): ask again.
        s.recorder.events.clear();
        engine.map_object(l.requester, name, 0, 0);
        l.events = s.recorder.events;
    }
    l.context = "needed by " + object_display(engine, l.requester, program) + ", at startup";
}

// Picks the lookup to explain: the startup one, else (or with --from) a
// dlopen.  Returns kUsage, printed, for a --from that names nothing loaded.
int why_lookup(const Options& o, Session& s, WhyLookup& l) {
    Engine& engine = *s.engine;
    for (const auto& op : o.ops) {
        l.requester = from_object(engine, op.arg, o.program);
        if (l.requester < 0) return kUsage;
    }
    if (l.requester < 0) startup_lookup(s, o.why_name, o.program, l);
    if (l.events.empty()) {
        if (l.requester < 0) l.requester = engine.main_object();
        s.recorder.events.clear();
        DlopenRequest req;
        req.caller = l.requester;
        req.name = o.why_name;
        engine.dlopen(req);
        l.events = s.recorder.events;
        l.context = "dlopen from " + object_display(engine, l.requester, o.program);
    }
    return kOk;
}

}  // namespace

int run_search(const Options& o) {
    Session& s = run_session();
    JsonOut json;
    if (int status = begin(o, s, json); status != kOk) return status;
    if (!s.start.ok) {
        if (json.on) {
            json.doc["searches"] = searches_json(s.recorder.events);
            return json.print(kLoadFailed);
        }
        std::fflush(stdout);
        std::fprintf(stderr, "%s\n", s.start.error.c_str());
        return kLoadFailed;
    }
    if (json.on) {
        json.doc["searches"] = searches_json(s.recorder.events);
        s.recorder.events.clear();
        json.doc["dlopens"] = nlohmann::json::array();
    }
    return run_dlopens(o, s, json);
}

int run_tree(const Options& o) {
    Session& s = run_session();
    JsonOut json;
    if (int status = begin(o, s, json); status != kOk) return status;
    DepNode top = dependency_tree(*s.engine);
    bool missing = false;
    std::size_t deepest = 0;
    std::vector<std::pair<const DepNode*, std::size_t>> stack{{&top, 0}};
    while (!stack.empty()) {
        auto [n, depth] = stack.back();
        stack.pop_back();
        missing = missing || n->how == DepNode::How::not_found;
        deepest = std::max(deepest, depth);
        for (const auto& c : n->children) stack.emplace_back(&c, depth + 1);
    }
    if (deepest > 64) json.indent = -1;
    if (json.on) {
        json.doc["tree"] = tree_json(*s.engine, top, o.program);
        return json.print(missing ? kLoadFailed : kOk);
    }
    Colors colors{want_colors(o.color, stdout)};
    print_tree(stdout, *s.engine, top, o.program, colors);
    return missing ? kLoadFailed : kOk;
}

int run_why(const Options& o) {
    Session& s = run_session();
    JsonOut json;
    if (int status = begin(o, s, json); status != kOk) return status;
    WhyLookup l;
    if (int status = why_lookup(o, s, l); status != kOk) return status;
    const std::string& name = o.why_name;
    WhyReport r = explain_lookup(*s.engine, l.requester, name, l.events, o.program);
    int status = r.found ? kOk : kLoadFailed;
    auto kind = [](WhyItem::Kind k) {
        return k == WhyItem::Kind::searched ? "searched" : k == WhyItem::Kind::skipped ? "skipped" : "note";
    };
    if (json.on) {
        json.doc["name"] = name;
        json.doc["lookup"] = l.context;
        json.doc["items"] = nlohmann::json::array();
        for (const auto& it : r.items)
            json.doc["items"].push_back({{"kind", kind(it.kind)}, {"where", it.where}, {"reason", it.reason}});
        json.doc["verdict"] = r.verdict;
        json.doc["found"] = r.found;
        return json.print(status);
    }
    std::printf("%s (%s):\n", name.c_str(), l.context.c_str());
    for (const auto& it : r.items) std::printf("  %-9s %s: %s\n", kind(it.kind), it.where.c_str(), it.reason.c_str());
    std::printf("verdict: %s\n", r.verdict.c_str());
    return status;
}

}  // namespace ldsearch
