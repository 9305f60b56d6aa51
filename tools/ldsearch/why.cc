#include "tools/ldsearch/why.h"

#include "tools/ldsearch/dep_tree.h"

#include <elf.h>

#include <algorithm>
#include <set>

namespace ldsearch {

namespace {

std::string dir_of(const std::string& path) {
    auto slash = path.rfind('/');
    return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

const char* drop_reason(DstDrop d) {
    switch (d) {
        case DstDrop::unknown_value: return "dropped: a token with no value here ($PLATFORM unknown, or $ORIGIN of an object without a path)";
        case DstDrop::secure_position: return "dropped in secure mode: $ORIGIN is only allowed alone at the start";
        case DstDrop::untrusted_dir: return "dropped in secure mode: the expansion is not inside a trusted system directory";
        case DstDrop::none: break;
    }
    return "dropped";
}

}  // namespace

WhyReport explain_lookup(const Engine& e, Fs& fs, int requester, const std::string& name,
                         const std::vector<TraceEvent>& events, const std::string& argv0) {
    using K = TraceEvent::Kind;
    WhyReport r;
    const auto& objs = e.objects();
    auto label = [&](int idx) { return object_display(e, idx, argv0); };
    const Object& req = objs[static_cast<std::size_t>(requester)];

    if (name.find('/') != std::string::npos)
        r.items.push_back({WhyItem::Kind::note, name,
                           "the name contains a slash: it is opened as given (relative names from the current "
                           "directory) and no directory is searched"});
    if (e.secure())
        r.items.push_back({WhyItem::Kind::note, "secure mode",
                           "AT_SECURE: LD_LIBRARY_PATH is ignored and $ORIGIN is restricted"});

    // 1. What the loader did, from its trace.
    // The lookup's own result names it (detail); later ones belong to the
    // dependencies a dlopen loads with it.
    std::optional<TraceEvent> result;
    std::size_t end = events.size();
    for (std::size_t i = 0; i < events.size(); ++i)
        if (events[i].kind == K::result && events[i].detail == name) {
            result = events[i];
            end = i;
            break;
        }
    std::set<std::string> dirs_reported;
    std::string found_path = result ? result->text : "";
    for (std::size_t i = 0; i < end; ++i) {
        const TraceEvent& ev = events[i];
        if (ev.kind == K::search_cache) {
            bool hit = i + 1 < end && events[i + 1].kind == K::trying;
            bool nodeflib = i + 1 < end && events[i + 1].kind == K::rejected;
            if (nodeflib)
                r.items.push_back({WhyItem::Kind::skipped, ev.text + " entry " + events[i + 1].text,
                                   "not used: " + label(requester) + " is linked with -z nodefaultlib (DF_1_NODEFLIB)"});
            else if (!hit)
                r.items.push_back({WhyItem::Kind::searched, ev.text, "no entry for " + name});
        } else if (ev.kind == K::trying) {
            std::string reason;
            if (i + 1 < end && events[i + 1].kind == K::rejected && events[i + 1].text == ev.text)
                reason = "rejected: " + events[i + 1].detail;
            else if (result && ev.text == found_path)
                reason = "";
            else if (fs.stat(dir_of(ev.text)).error != 0)
                reason = "the directory does not exist";
            else if (fs.stat(ev.text).error != 0)
                reason = "no such file";
            else
                reason = "not usable";
            dirs_reported.insert(dir_of(ev.text));
            r.items.push_back({WhyItem::Kind::searched, ev.text, reason.empty() ? "found" : reason});
        }
    }

    // 2. What it did not look at, and why: from the model.
    std::vector<int> chain;  // the requester, then its loaders up to the program
    for (int i = requester; i >= 0 && std::find(chain.begin(), chain.end(), i) == chain.end();
         i = objs[static_cast<std::size_t>(i)].loader)
        chain.push_back(i);
    if (std::find(chain.begin(), chain.end(), e.main_object()) == chain.end()) chain.push_back(e.main_object());
    bool req_runpath = req.facts.runpath.has_value();
    bool slash = name.find('/') != std::string::npos;
    for (int idx : chain) {
        const Object& o = objs[static_cast<std::size_t>(idx)];
        if (!slash && o.facts.effective_rpath() && req_runpath)
            r.items.push_back({WhyItem::Kind::skipped, "RPATH of " + label(idx) + " (" + *o.facts.effective_rpath() + ")",
                               "not searched: " + label(requester) +
                                   " has a RUNPATH, which turns off every RPATH of the chain"});
        if (!slash && o.facts.runpath && idx != requester)
            r.items.push_back({WhyItem::Kind::skipped, "RUNPATH of " + label(idx) + " (" + *o.facts.runpath + ")",
                               "not searched: a RUNPATH serves only the object's own dependencies (it is not "
                               "inherited by " + label(requester) + ")"});
        for (bool rp : {false, true}) {
            bool used = rp ? idx == requester : !req_runpath;
            if (!used || slash) continue;
            for (const auto& [elem, why] : e.dropped_elements(idx, rp))
                r.items.push_back({WhyItem::Kind::skipped,
                                   std::string(rp ? "RUNPATH" : "RPATH") + " element " + elem + " of " + label(idx),
                                   drop_reason(why)});
            // Directories known missing are no longer even printed: say so.
            for (const DirEntry* d : rp ? o.runpath_dirs : o.rpath_dirs) {
                std::string dir = d->dirname.empty() ? "." : d->dirname;
                if (dir.size() > 1 && dir.back() == '/') dir.pop_back();
                if (dirs_reported.count(dir) || fs.stat(dir).error == 0) continue;
                dirs_reported.insert(dir);
                r.items.push_back({WhyItem::Kind::skipped, dir, "the directory does not exist"});
            }
        }
    }
    if (!slash && (req.facts.flags_1 & DF_1_NODEFLIB))
        r.items.push_back({WhyItem::Kind::skipped, "ld.so.cache and the system directories",
                           "not searched: " + label(requester) + " is linked with -z nodefaultlib (DF_1_NODEFLIB)"});

    // 3. The verdict.
    if (result && (result->source == Source::already_loaded || result->source == Source::same_file)) {
        r.found = true;
        r.verdict = name + ": already loaded as " + (result->text.empty() ? argv0 : result->text);
    } else if (result) {
        r.found = true;
        r.verdict = name + ": found " + result->text + " (" + source_text(result->source) + ")";
    } else {
        std::size_t tried = 0;
        for (const auto& it : r.items) tried += it.kind == WhyItem::Kind::searched;
        r.verdict = name + ": not found (" + std::to_string(tried) + " places looked at)";
    }
    return r;
}

}  // namespace ldsearch
