// The environments ldsearch --diff's audit module (env_audit.c) recorded:
// one record per exec of one process, in exec order, each the bytes of
// /proc/self/environ at the loader's start.  Pure: text in, environments out;
// never trusts the input.
#pragma once

#include "loader/engine.h"

#include <functional>
#include <optional>
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

// NAME's value as the loader reads it: ld.so walks the whole block and the
// last assignment wins (getenv would take the first).
std::optional<std::string> loader_env_value(const Environment& env, std::string_view name);

// The variables of an environment that steer the loader's search
// (LD_LIBRARY_PATH, LD_PRELOAD, LD_ORIGIN_PATH), set into `opts`; `value`
// answers for one name.  The one place that lists them for ldsearch.
void model_environment(ldshim::loader::EngineOptions& opts,
                       const std::function<std::optional<std::string>(const std::string&)>& value);

}  // namespace ldsearch
