// How ldsearch finds and models a program, shared by its modes: the shell's
// PATH lookup, and whether the kernel would start it with AT_SECURE.
#pragma once

#include <functional>
#include <string>

namespace ldsearch {

// `name` as a shell would run it: unchanged if it has a slash, else the
// first PATH entry (default /usr/bin:/bin) where `runnable(candidate)`
// holds; "" if none.
std::string find_program(const std::string& name, const std::function<bool(const std::string&)>& runnable);

// The kernel sets AT_SECURE when a set-id bit changes the effective id:
// would it for the file at `host_path`, started by this process's ids?
bool starts_secure(const std::string& host_path);

}  // namespace ldsearch
