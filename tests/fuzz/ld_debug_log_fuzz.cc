// libFuzzer target: the parsers of the loader's own words: the LD_DEBUG log
// of ldsearch --diff/--replay and the environment records of its audit
// module, and what a loader says of itself (ld.so --help and the probe
// search, loader/loader_probe.cc), and the cache file of its configuration
// (loader/loader_config_codec.cc).
#include "loader/loader_config.h"
#include "tools/ldsearch/env_record.h"
#include "tools/ldsearch/ld_debug_log.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    auto envs = ldsearch::parse_env_records(text);
    for (const auto& env : envs.execs)
        if (ldshim::loader::loader_env_value(ldshim::loader::env_entries(env), "LD_LIBRARY_PATH").value_or("").size() >
            size)
            return 1;
    std::string why;
    if (auto cfg = ldshim::loader::config_from_answers(std::nullopt, text, &why)) {
        if (cfg->subdirs.empty() || !cfg->subdirs.back().empty()) return 1;  // the directory itself comes last
        // The cache keeps it as encode_config writes it.
        if (ldshim::loader::decode_config(ldshim::loader::encode_config(*cfg)) != cfg) __builtin_trap();
    }
    // A cache file is input too: what decodes must come through a round trip unchanged.
    if (auto cached = ldshim::loader::decode_config(text))
        if (ldshim::loader::decode_config(ldshim::loader::encode_config(*cached)) != cached) __builtin_trap();
    if (auto cfg = ldshim::loader::parse_ld_so_help(text, &why))
        if (cfg->system_dirs.empty()) return 1;
    auto r = ldsearch::parse_ld_debug_log(text);
    if (r.process) {
        std::size_t n = 0;
        for (const auto& p : r.process->programs) {
            n += p.argv0.size();
            for (const auto& l : p.startup) n += l.lines.size() + l.name.size() + l.requester.size();
            for (const auto& l : p.later) n += l.lines.size() + l.name.size() + l.requester.size();
        }
        if (n == static_cast<std::size_t>(-1)) return 1;
    } else if (r.error.empty()) {
        return 1;  // neither a result nor an error: a bug
    }
    return 0;
}
