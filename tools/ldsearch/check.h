// `ldsearch check [--json] PATH...`: every ELF program and shared library
// under the given files and directories, resolved as the loader would when
// it starts (programs, as `ldsearch --keep-going PROGRAM`) or when it is
// dlopen'ed by its path from an empty program (libraries), in parallel; the
// problems of each, and SONAMEs that resolve to different files across them.
#pragma once

#include "loader/fs.h"
#include "options.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ldsearch {

// One problem of one checked file.
struct CheckProblem {
    // missing, ld_library_path_only, rpath_missing, rpath_outside,
    // wrong_class, error
    std::string kind;
    std::string name;       // the library, the RPATH/RUNPATH element, the skipped file
    std::string detail;     // the path found, the expanded directory, the reason
    std::string needed_by;  // missing: the object whose DT_NEEDED names it
};

// A library a checked file resolved, by SONAME (or the name asked for).
struct CheckResolved {
    std::string soname;
    ldshim::loader::FileId id;
    std::string path;
};

struct CheckedFile {
    enum class Kind : std::uint8_t { program, library, not_elf, foreign, not_dynamic, unreadable };
    std::string path;
    Kind kind = Kind::not_elf;
    std::uint16_t machine = 0;  // e_machine, once read
    std::vector<CheckProblem> problems;
    std::vector<CheckResolved> resolved;
};

int run_check(const Options& o);

}  // namespace ldsearch
