#include "tools/ldsearch/why.h"

#include "tools/ldsearch/dep_tree.h"

#include <set>

namespace ldsearch {

namespace {

std::string list_name(Label l) { return l == Label::runpath ? "RUNPATH" : "RPATH"; }

// "RPATH of ./main ($ORIGIN/lib)": a list as people know it.
std::string list_of(const Engine& e, const TraceEvent& ev, const std::string& who) {
    const Object& o = e.objects()[static_cast<std::size_t>(ev.object)];
    const auto& str = ev.label == Label::runpath ? o.facts.runpath : o.facts.rpath;
    return list_name(ev.label) + " of " + who + (str ? " (" + *str + ")" : "");
}

// A skipped event as an item: what was left out and why, in words.
WhyItem skipped_item(const Engine& e, const TraceEvent& ev, const std::string& requester, const std::string& argv0) {
    std::string who = ev.object >= 0 ? object_display(e, ev.object, argv0) : "";
    auto item = [](std::string where, std::string reason) {
        return WhyItem{WhyItem::Kind::skipped, std::move(where), std::move(reason)};
    };
    switch (ev.skip) {
        case Skip::rpath_under_runpath:
            return item(list_of(e, ev, who),
                        "not searched: " + requester + " has a RUNPATH, which turns off every RPATH of the chain");
        case Skip::runpath_not_inherited:
            return item(list_of(e, ev, who),
                        "not searched: a RUNPATH serves only the object's own dependencies (it is "
                        "not inherited by " +
                            requester + ")");
        case Skip::list_dropped:
            return item(list_of(e, ev, who),
                        "not searched: all its directories were found missing by an earlier lookup");
        case Skip::element_dropped: return item(list_name(ev.label) + " element " + ev.text + " of " + who, ev.detail);
        case Skip::dir_missing: return item(ev.text, "the directory does not exist");
        case Skip::library_path_secure: return item("LD_LIBRARY_PATH", "ignored in secure mode (AT_SECURE)");
        case Skip::cache_secure_preload: return item("ld.so.cache", "not used for a preload in secure mode");
        case Skip::cache_inhibited: return item("ld.so.cache", "not used: the loader runs with --inhibit-cache");
        case Skip::nodeflib:
            return item("the system directories",
                        "not searched: " + who + " is linked with -z nodefaultlib (DF_1_NODEFLIB)");
        case Skip::none: break;
    }
    return item(ev.text, ev.detail);
}

// What became of a candidate the loader tried: the event after it says.
std::string outcome_of(const std::vector<TraceEvent>& events, std::size_t i, std::size_t end,
                       const std::optional<TraceEvent>& result) {
    using K = TraceEvent::Kind;
    const TraceEvent& ev = events[i];
    // glibc 2.43's note on the candidate comes first (a line of the log).
    std::size_t next = i + 1;
    while (next < end && events[next].kind == K::candidate_failed) ++next;
    if (next < end && events[next].text == ev.text) {
        if (events[next].kind == K::rejected) return "rejected: " + events[next].detail;
        if (events[next].kind == K::missed) return events[next].detail;
    }
    return result && ev.text == result->text ? "found" : "not usable";
}

std::string verdict(const std::string& name, const std::optional<TraceEvent>& result, const WhyReport& r,
                    const std::string& argv0) {
    if (result && (result->source == Source::already_loaded || result->source == Source::same_file))
        return name + ": already loaded as " + (result->text.empty() ? argv0 : result->text);
    if (result) return name + ": found " + result->text + " (" + source_text(result->source) + ")";
    std::size_t tried = 0;
    for (const auto& it : r.items) tried += it.kind == WhyItem::Kind::searched;
    return name + ": not found (" + std::to_string(tried) + " places looked at)";
}

}  // namespace

WhyReport explain_lookup(const Engine& e, int requester, const std::string& name, const std::vector<TraceEvent>& events,
                         const std::string& argv0) {
    using K = TraceEvent::Kind;
    WhyReport r;
    if (name.find('/') != std::string::npos)
        r.items.push_back({WhyItem::Kind::note, name,
                           "the name contains a slash: it is opened as given (relative names from the current "
                           "directory) and no directory is searched"});
    if (e.secure())
        r.items.push_back(
            {WhyItem::Kind::note, "secure mode", "AT_SECURE: LD_LIBRARY_PATH is ignored and $ORIGIN is restricted"});

    // The lookup's own result names it (detail); later events belong to the
    // dependencies a dlopen loads with it.
    std::optional<TraceEvent> result;
    std::size_t end = events.size();
    for (std::size_t i = 0; i < events.size(); ++i)
        if (events[i].kind == K::result && events[i].detail == name) {
            result = events[i];
            end = i;
            break;
        }
    const std::string requester_name = object_display(e, requester, argv0);
    std::set<std::string> reported;  // a missing directory is said once
    for (std::size_t i = 0; i < end; ++i) {
        const TraceEvent& ev = events[i];
        if (ev.kind == K::search_cache && !(i + 1 < end && events[i + 1].kind == K::trying)) {
            r.items.push_back({WhyItem::Kind::searched, ev.text, "no entry for " + name});
        } else if (ev.kind == K::trying) {
            r.items.push_back({WhyItem::Kind::searched, ev.text, outcome_of(events, i, end, result)});
        } else if (ev.kind == K::skipped) {
            WhyItem item = skipped_item(e, ev, requester_name, argv0);
            if (reported.insert(item.where + "\n" + item.reason).second) r.items.push_back(std::move(item));
        }
    }
    r.found = result.has_value();
    r.verdict = verdict(name, result, r, argv0);
    return r;
}

}  // namespace ldsearch
