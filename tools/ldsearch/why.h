// "Why was NAME (not) found?": one lookup's trace as a list of every place
// the loader considered or skipped, each with its reason, and a one-line
// verdict.  It only formats: the engine reports every decision in the trace
// (TraceEvent kinds rejected, missed, skipped), and nothing here restates a
// search rule or looks at the filesystem.
#pragma once

#include "loader/engine.h"
#include "loader/trace.h"

#include <string>
#include <vector>

namespace ldsearch {

// The engine's model and trace are this tool's vocabulary.
using namespace ldshim::loader;  // NOLINT(google-build-using-namespace)

struct WhyItem {
    enum class Kind : std::uint8_t {
        searched,  // a place the loader looked: "found" / "no such file" / rejection reason
        skipped,   // a list or directory the loader did not look in, and why
        note,      // context (the name has a slash, secure mode, ...)
    };
    Kind kind;
    std::string where;   // the directory, file or list concerned
    std::string reason;  // why it was rejected or not searched ("" for found)
};

struct WhyReport {
    std::vector<WhyItem> items;
    std::string verdict;  // one line
    bool found = false;
};

// `requester`: the object whose lookup it was (its loader chain decides the
// lists); `events`: that lookup's trace, from find_library (or nothing, for
// a name with a slash or an already loaded one) to its result.
WhyReport explain_lookup(const Engine& e, int requester, const std::string& name, const std::vector<TraceEvent>& events,
                         const std::string& argv0);

}  // namespace ldsearch
