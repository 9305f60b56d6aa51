// This process's own loader configuration, for the runtime resolver.
#pragma once

#include "host/startup_env.h"
#include "loader/loader_config.h"

#include <optional>
#include <string>

namespace ldshim::host {

// derive_in_process: this process's own loader configuration -- what
// `ld.so --help` prints when run with this process's environment -- computed
// without spawning anything or writing anything (the runtime runs inside
// other people's processes: seccomp sandboxes, MPI daemons that reap every
// child, shared home directories), on glibc 2.28 to 2.43, x86-64 and
// aarch64 (the machine read from the loader's own ELF header).  Anything
// else -- another glibc, another architecture, legacy hwcap bits ldshim
// cannot name (an aarch64 hwcap mask holding a bit above 27), a program
// started as `ld.so PROGRAM` (whose options are not visible), a search list
// that cannot be accounted for -- returns nullopt with the reason in *error;
// the runtime then leaves dlopen to glibc (resolver/live_process.cc) rather
// than guess.  `env`: what ld.so read at start-up (LD_LIBRARY_PATH,
// LD_ORIGIN_PATH, the hwcap mask).
std::optional<loader::LoaderConfig> derive_in_process(const StartupEnvironment& env, std::string* error);

// The main program's $ORIGIN as ld.so takes it (loader::main_program_origin):
// from /proc/self/exe's target, read with readlink alone (so " (deleted)"
// and all, for a program replaced while it runs), else from the start-up
// LD_ORIGIN_PATH.
std::optional<std::string> main_program_origin(const StartupEnvironment& env, bool secure);

}  // namespace ldshim::host
