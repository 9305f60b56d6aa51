// ldsearch's modes that model PROGRAM with the engine: each sets up a
// Session, prints as text or (--json) one JSON document, and returns the exit
// status.  --diff and --replay are diff.h's.
#pragma once

#include "options.h"

namespace ldsearch {

int run_search(const Options& o);  // the LD_DEBUG=libs lines, then --dlopen and friends
int run_tree(const Options& o);
int run_why(const Options& o);

}  // namespace ldsearch
