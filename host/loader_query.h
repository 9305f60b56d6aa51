// The configuration a loader binary states (`ld.so --help`), for ldsearch.
#pragma once

#include "loader/loader_config.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ldshim::host {

// The environment variables that change what a loader says about the CPU
// (its hwcap mask).  By default this process's own; ldsearch --diff passes
// those each recorded process started with.
struct LoaderCpuEnv {
    // the GLIBC_TUNABLES=, LD_HWCAP_MASK= and QEMU_CPU= entries, in order
    std::vector<std::string> entries;
    // A loader of another machine runs through an emulator (qemu-user,
    // registered with binfmt_misc), which decides the CPU it sees: its
    // identity (emulator_identity), for the cache key only.
    std::string emulator;
    // Those entries of an environment block ("NAME=VALUE" strings).
    static LoaderCpuEnv of(const std::vector<std::string>& environment);
    static LoaderCpuEnv of_this_process();
};

// Empty for a loader of this build's own machine (e_machine); else the
// binfmt_misc interpreters registered, each with its file's identity
// (device, inode, size, mtime), so that another qemu asks afresh.
std::string emulator_identity(std::uint16_t machine);

// Run `RTLD --help` with `env`'s GLIBC_TUNABLES / LD_HWCAP_MASK and parse
// it.  This is the edge that talks to the real loader.
std::optional<loader::LoaderConfig> query_running_loader(const std::string& rtld, std::string* error,
                                                         const LoaderCpuEnv& env = LoaderCpuEnv::of_this_process());

// The same, through a small on-disk cache of the configuration the loader's
// answer gave (running ld.so is a large part of a whole ldsearch run, and a
// hit parses none of its text).
// The cache key covers everything the answer depends on: the loader file
// (device, inode, size, mtime), GLIBC_TUNABLES, LD_HWCAP_MASK, QEMU_CPU, the CPU's
// feature words and OS-enabled state, and the boot id; and, since the file
// holds the parsed configuration, the program that parsed it (its GNU
// build ID, or without one the file /proc/self/exe names, by the same four
// facts).  `dir` empty: no cache.
std::optional<loader::LoaderConfig> query_loader_cached(const std::string& rtld, const std::string& dir,
                                                        std::string* error,
                                                        const LoaderCpuEnv& env = LoaderCpuEnv::of_this_process());

// $XDG_CACHE_HOME/ldshim or $HOME/.cache/ldshim; empty when neither is set or
// LDSHIM_NO_CACHE is set.
std::string default_cache_dir();

}  // namespace ldshim::host
