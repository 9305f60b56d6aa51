// The host facts the runtime's model takes a live process's start-up from
// (resolver/live_process.cc, LiveProcess::process_start): which file each
// loaded object is, by the identity glibc compared when it loaded it, the
// directory current when the loader opened a file by a relative name, and
// how the program was invoked.
#pragma once

#include "host/mapped_files.h"
#include "loader/fs.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace ldshim::host {

// Whether the kernel's record of a mapping names a file as stat(2) does:
// checked on the main program, whose file /proc/self/exe opens.  (On
// overlayfs, for one, the mapping may name the layer's file.)  Only then
// are `maps`' identities trusted.
bool maps_name_files_as_stat(const MappedFiles& maps);

// The file glibc opened for a loaded object, by the identity it compares
// (st_dev, st_ino): the kernel's record of the mapping at `first_segment`,
// where `maps` is given (trusted); else the file at the object's `name`, if
// that is an absolute path still holding the mapped object (the same GNU
// build ID).  No identity is better than another file's.
loader::FileId file_identity_of(const std::string& name, std::uintptr_t first_segment, const std::string& build_id,
                                const MappedFiles* maps);

// The directory current when the loader opened the file `mapped` by the
// relative name `name`: the mapped path less the name, where the name holds
// no "." or ".." step that would make them differ (a symbolic link on the
// way shows as a mismatch); else empty.
std::string directory_it_was_named_from(std::string_view name, const MappedFiles::File& mapped);

// The first word of /proc/self/cmdline, how the program was invoked.
std::string argv0();

}  // namespace ldshim::host
