// ldsearch --diff -- COMMAND: run COMMAND under LD_DEBUG=libs,files (through
// LD_DEBUG_OUTPUT, so its own output is untouched and children are covered),
// then replay every search of every process with the engine and compare.
// ldsearch --replay LOG...: the same on logs captured earlier.
#pragma once

#include <string>
#include <vector>

namespace ldsearch {

// Returns the exit status: 0 all identical, 1 differences, 3 unusable
// capture, 125 the command could not be run.
// With `json`, one JSON document (docs/ldsearch.schema.json, mode "diff")
// replaces the text.
int diff_command(const std::vector<std::string>& command, bool keep, bool json);
int replay_logs(const std::vector<std::string>& logs, bool json);

}  // namespace ldsearch
