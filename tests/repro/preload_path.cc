// The preload under test, as the build names it: in a file of its own, so
// that mpi_test.cc compiles the same in every build directory and ccache
// hands it from one to the other (the demo's build-demo, then ./build:
// scripts/build-cache.sh).
#include "preload_path.h"

#ifndef PRELOAD_LIB_PATH
#error "PRELOAD_LIB_PATH must name libldshim_preload.so"
#endif

namespace ldshim::difftest::report {

const char* preload_lib_path() { return PRELOAD_LIB_PATH; }

}  // namespace ldshim::difftest::report
