// ldsearch's human and JSON output for the modes beyond the plain
// LD_DEBUG=libs lines: the dependency tree, and JSON for every mode.  The
// data comes from loader/ (the engine, its trace, dep_tree); this file only
// formats.
#pragma once

#include "loader/engine.h"
#include "loader/trace.h"
#include "tools/ldsearch/dep_tree.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>
#include <vector>

namespace ldsearch {

struct Colors {
    bool on = false;
    const char* name() const { return on ? "\033[1m" : ""; }
    const char* path() const { return on ? "\033[36m" : ""; }
    const char* how() const { return on ? "\033[33m" : ""; }
    const char* dim() const { return on ? "\033[2m" : ""; }
    const char* bad() const { return on ? "\033[1;31m" : ""; }
    const char* off() const { return on ? "\033[0m" : ""; }
};

// "auto": on a terminal, unless NO_COLOR is set (to anything non-empty) or
// TERM is "dumb".
bool want_colors(const std::string& when, std::FILE* out);

void print_tree(std::FILE* out, const ldshim::loader::Engine& e, const DepNode& root, const std::string& argv0,
                const Colors& c);
nlohmann::json tree_json(const ldshim::loader::Engine& e, const DepNode& root, const std::string& argv0);

// The searches of a trace, one object per find_library: its LD_DEBUG lines,
// its steps, and its result.
nlohmann::json searches_json(const std::vector<ldshim::loader::TraceEvent>& events);

}  // namespace ldsearch
