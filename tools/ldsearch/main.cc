// ldsearch: print the dynamic loader's library search for a program, line for
// line as LD_DEBUG=libs prints it, without running the program.  All the logic
// lives in loader/; this file only dispatches: options.cc parses arguments,
// session.cc sets up the engine, modes.cc and diff.cc print, check.cc checks
// whole trees.
#include "check.h"
#include "diff.h"
#include "modes.h"
#include "options.h"

#include <cstdio>

using namespace ldsearch;

int main(int argc, char** argv) {
    ParseResult parsed = parse_options(argc, argv);
    if (!parsed.options) {
        if (!parsed.error.empty()) return usage_error(parsed.error);
        std::fputs(parsed.out.c_str(), stdout);
        return parsed.status;
    }
    const Options& o = *parsed.options;
    switch (o.mode) {
        case Mode::diff: return diff_command(o.operands, o.keep, o.json);
        case Mode::replay: return replay_logs(o.operands, o.json);
        case Mode::tree: return run_tree(o);
        case Mode::why: return run_why(o);
        case Mode::check: return run_check(o);
        case Mode::search: break;
    }
    return run_search(o);
}
