// The setup that the search, tree and why modes share: the filesystem (the
// host's or --root's), PROGRAM, the loader's configuration and ld.so.cache,
// and the engine that has started PROGRAM.
#pragma once

#include "host/real_fs.h"
#include "loader/engine.h"
#include "loader/ld_cache.h"
#include "loader/trace.h"
#include "options.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace ldsearch {

// Not to be moved once started: the engine keeps references to fs, cache,
// printer and recorder.
struct Session {
    std::unique_ptr<ldshim::loader::Fs> fs;
    ldshim::host::RootFs* rootfs = nullptr;  // fs, under --root
    std::string root;                        // --root
    std::string path;                        // PROGRAM after the PATH lookup
    std::uint16_t machine = 0;               // PROGRAM's e_machine
    ldshim::loader::LdCache cache;
    std::optional<ldshim::loader::LdDebugPrinter> printer;
    ldshim::loader::TraceRecorder recorder;
    ldshim::loader::EngineOptions engine_options;
    std::unique_ptr<ldshim::loader::Engine> engine;
    ldshim::loader::StartResult start;

    // A path inside --root as a host path (for the few calls made outside Fs).
    std::string host(const std::string& p) const;
};

// Sets up `s` and starts PROGRAM (startup only; the modes do the rest).
// Returns kOk, or the exit status once the reason is printed.
int start_session(const Options& o, Session& s);

}  // namespace ldsearch
