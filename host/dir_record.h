// glibc's own record of the search directories: GL(dl_all_dirs), the list of
// every directory any search list of this process has named, each with one
// status per subdirectory index (unknown, missing, there).  A search skips a
// directory recorded missing and never looks at it again.
//
// The runtime's model emulates the process's start-up against the file
// system as it is when the model is built; a directory created or removed in
// between is recorded by glibc as it was at start-up.  Reading glibc's record
// gives the model what glibc knows instead.
//
// The list head is a private field of `_rtld_global` whose offset changes
// between releases: it is found by its contents (a chain of elements whose
// tail is the system search path, every one well formed), every word read
// with process_vm_readv, so that a wrong guess reads nothing it should not.
#pragma once

#include "loader/path_pool.h"

#include <optional>
#include <string>
#include <vector>

namespace ldshim::host {

struct RecordedDir {
    std::string dirname;                    // as glibc keeps it: ends in '/'
    std::vector<loader::DirStatus> status;  // one per subdirectory index
};

// glibc's record now, each element with `nsubdirs` statuses; nullopt when
// the list cannot be found or read, or does not have that shape.
std::optional<std::vector<RecordedDir>> read_dir_record(std::size_t nsubdirs);

}  // namespace ldshim::host
