// ldsearch check's output: the problems of each file, the SONAMEs resolved
// to different files across all of them, and the summary; as text or JSON.
#pragma once

#include "check.h"
#include "options.h"

#include <string>
#include <vector>

namespace ldsearch {

// Prints the report of `files` (in order) and returns the exit status:
// kLoadFailed if anything is reported, kOk if nothing.
int report_check(const Options& o, const std::vector<CheckedFile>& files, const std::vector<std::string>& warnings);

}  // namespace ldsearch
