// The loader's environment as ld.so reads it at start-up: the one reader of
// LD_LIBRARY_PATH, LD_PRELOAD and LD_ORIGIN_PATH for the runtime and for
// ldsearch.  Pure: the host side says which block ld.so read
// (host/startup_env.h).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ldshim::loader {

struct EngineOptions;

// One environment as ld.so walks it: its NAME=VALUE entries, in order.
using EnvEntries = std::vector<std::string_view>;
// From NUL-separated strings (the form of /proc/self/environ); a final
// entry without its NUL counts too.
EnvEntries env_entries(std::string_view block);
// From a null-terminated array (an `environ`); null is an empty environment.
EnvEntries env_entries(const char* const* envp);
EnvEntries env_entries(const std::vector<std::string>& strings);

// The entries of the start-up strings as ld.so read them, from those
// strings as ld.so left them: before 2.39, parse_tunables ends the value of
// each tunable it knows inside GLIBC_TUNABLES with a NUL written over the
// ':' after it, so a piece that follows GLIBC_TUNABLES and starts with a
// glibc. tunable is joined back.  Blind to a piece that starts otherwise
// ("...hwcaps=-AVX2:foo=1:..."), which stays a variable of its own.
std::vector<std::string> startup_entries(std::string_view block);

// NAME's value as ld.so takes it: process_envvars walks the whole block and
// each NAME= entry overwrites the one before, so the last one wins (getenv
// would take the first); an entry without '=' is no assignment.
std::optional<std::string_view> loader_env_value(const EnvEntries& env, std::string_view name);

// The variables the search model reads, as they stand in the block (the
// last of each).  The secure-mode rules are applied where ld.so applies them:
// LD_LIBRARY_PATH by the engine (which reports it ignored), LD_ORIGIN_PATH
// by main_program_origin, the hwcap mask by hwcap_mask_from_env; LD_PRELOAD
// is read in secure mode too (only names without a slash load).
struct LoaderEnvironment {
    std::optional<std::string> library_path;  // LD_LIBRARY_PATH
    std::optional<std::string> preload;       // LD_PRELOAD
    std::optional<std::string> origin_path;   // LD_ORIGIN_PATH
};
LoaderEnvironment read_loader_environment(const EnvEntries& env);

// Those variables into the engine's options.
void set_environment(EngineOptions& opts, const LoaderEnvironment& env);

// The main program's $ORIGIN as ld.so's _dl_get_origin takes it: the
// directory part of the program's path (the kernel's /proc/self/exe), else
// LD_ORIGIN_PATH without trailing slashes -- never in secure mode -- else
// none.
std::optional<std::string> main_program_origin(const std::optional<std::string>& program_path,
                                               const std::optional<std::string>& origin_path, bool secure);

}  // namespace ldshim::loader
