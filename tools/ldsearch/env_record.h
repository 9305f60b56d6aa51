// The environments ldsearch --diff's audit module (env_audit.c) recorded:
// one record per exec of one process, in exec order, each the bytes of
// /proc/self/environ at the loader's start.  Pure (text in, environments
// out; never trusts the input), but for own_environment.
#pragma once

#include "loader/loader_env.h"

#include <string>
#include <string_view>
#include <vector>

namespace ldsearch {

// "NAME=VALUE" entries, in the order the process received them.
using Environment = std::vector<std::string>;

struct EnvRecords {
    std::vector<Environment> execs;  // one per exec, in order
    bool truncated = false;          // the text ended inside a record, or a header was unreadable
};

EnvRecords parse_env_records(std::string_view text);

// The environment ldsearch runs with, as a program it starts would inherit
// it; loader/loader_env.h reads the loader's variables from either.
ldshim::loader::EnvEntries own_environment();

}  // namespace ldsearch
