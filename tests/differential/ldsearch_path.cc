// The ldsearch under test, as the build names it: in a file of its own, so
// that harness.cc compiles the same in every build directory and ccache
// hands it from one to the other (the demo's build-demo, then ./build:
// scripts/build-cache.sh).
#include "harness.h"

#ifndef LDSEARCH_PATH
#error "LDSEARCH_PATH must name the ldsearch binary under test"
#endif

namespace ldshim::difftest {

const char* ldsearch_path() { return LDSEARCH_PATH; }

}  // namespace ldshim::difftest
