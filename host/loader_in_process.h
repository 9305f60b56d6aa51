// This process's own loader configuration, for the runtime resolver.
#pragma once

#include "loader/loader_config.h"

#include <optional>
#include <string>

namespace ldshim::host {

// derive_in_process: this process's own loader configuration -- what
// `ld.so --help` prints when run with this process's environment -- computed
// without spawning anything or writing anything (the runtime runs inside
// other people's processes: seccomp sandboxes, MPI daemons that reap every
// child, shared home directories).  Exact for glibc 2.36 on x86-64 and
// aarch64 (the machine read from the loader's own ELF header), the version
// the engine emulates.  Anything else -- another glibc, another
// architecture, legacy hwcap bits ldshim cannot name (a hwcap mask wider
// than aarch64's default), a program started as `ld.so PROGRAM` (whose
// options are not visible), a search list that cannot be accounted for --
// returns nullopt with the reason in *error; the runtime then leaves dlopen
// to glibc (resolver/live_process.cc) rather than guess.
std::optional<loader::LoaderConfig> derive_in_process(std::string* error);

}  // namespace ldshim::host
