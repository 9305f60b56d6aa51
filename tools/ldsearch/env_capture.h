// The edge of ldsearch --diff that records the environment each process of
// the command started with: the audit module of env_audit.c, carried inside
// ldsearch, written next to the capture, and named to the command through
// LD_AUDIT.  See env_record.h for what it records.
#pragma once

#include "tools/ldsearch/env_record.h"

#include <optional>
#include <string>

namespace ldsearch {

struct EnvRecorder {
    // The audit module, inside the capture directory; with modules of two
    // machines, DIR/$PLATFORM/NAME, which each loader expands to its own.
    std::string module_path;
    std::string output_prefix;  // records go to OUTPUT_PREFIX.PID
};

// Writes the module into `dir`; nullopt, with why, if it cannot.
std::optional<EnvRecorder> install_env_recorder(const std::string& dir, std::string* error);

// In the child, just before exec: our module first in LD_AUDIT (any the
// user set stay after it) and LDSEARCH_ENV_OUTPUT.
void arm_env_recorder(const EnvRecorder& recorder);

// The records next to the LD_DEBUG_OUTPUT file `log` of process `pid`
// (DIR/env.PID); empty when there are none.
EnvRecords read_env_records(const std::string& log, long pid);

}  // namespace ldsearch
