// What this process's loader tries, learnt by asking it: the probe under
// LIBDIR/ldshim/probe (lib/ldshim/probe/meson.build).  No spawn, no file
// written; two dlopens of ldshim's own probe files, closed again.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

struct link_map;

namespace ldshim::host {

struct SelfProbe {
    // The glibc-hwcaps levels the loader has active, as LoaderConfig's
    // isa_levels bits (1 = baseline only: no level, or no glibc-hwcaps).
    std::uint32_t isa_levels = 1;
    bool legacy_subdirs = false;          // it tries tls/ and the other legacy hwcap subdirectories
    std::optional<std::string> platform;  // $PLATFORM as it expands it (none: it drops the element)
    std::string dst_lib;                  // $LIB
};

// nullopt, with the reason in *why, when the probe is missing or its answer
// is not one the probe's layout can give.
std::optional<SelfProbe> probe_own_loader(std::string* why);

// The directories RTLD_DI_SERINFO lists for a bare name looked up by `map`.
std::optional<std::vector<std::string>> read_serinfo(void* map);

}  // namespace ldshim::host
