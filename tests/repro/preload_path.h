// libldshim_preload.so of this build (preload_path.cc): out of the suites'
// own sources, which then compile the same in every build directory.
#pragma once

namespace ldshim::difftest::report {

const char* preload_lib_path();

}  // namespace ldshim::difftest::report
