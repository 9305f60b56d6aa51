// The facts about the running loader that the search depends on: system
// directories, hwcaps subdirectories, $LIB, $PLATFORM, hwcap bits.  They are
// read from the loader itself (`ld.so --help`), never hard-coded, so that the
// CPU, GLIBC_TUNABLES and LD_HWCAP_MASK of the caller are honoured.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ldshim::loader {

struct LoaderConfig {
    std::string rtld_path = "/lib64/ld-linux-x86-64.so.2";
    std::vector<std::string> system_dirs;  // each ends in '/'
    // Every subdirectory prefix tried inside a search directory, in order;
    // each ends in '/' except the last, which is "" (the directory itself).
    std::vector<std::string> subdirs;
    // Active glibc-hwcaps names in priority order (prepended names first).
    std::vector<std::string> hwcaps_active;
    // x86-64 ISA levels the CPU supports, as cache hwcap bits (1 = baseline,
    // 2 = v2, 4 = v3, 8 = v4).
    std::uint32_t isa_levels = 1;
    std::optional<std::string> platform;  // $PLATFORM (AT_PLATFORM or glibc's override)
    std::string dst_lib;                  // $LIB
    std::uint64_t hwcap_searched = 0;     // dl_hwcap & hwcap_mask
    std::string cache_path = "/etc/ld.so.cache";   // the file that is read
    std::string cache_label = "/etc/ld.so.cache";  // what LD_DEBUG prints
    bool inhibit_cache = false;
};

// Build the subdirectory list: glibc-hwcaps names, then (glibc 2.36) the
// legacy power set of `legacy` (hwcap names in ascending bit order, then the
// platform, then "tls"), ending with "".
std::vector<std::string> make_subdirs(const std::vector<std::string>& hwcaps_active,
                                      const std::vector<std::string>& legacy);

// Parse the text of `ld.so --help` (glibc 2.33 … 2.36 layout, and later ones
// that lack the legacy section).  On failure returns nullopt and sets *error.
std::optional<LoaderConfig> parse_ld_so_help(std::string_view text, std::string* error);

// Run `RTLD --help` with the caller's GLIBC_TUNABLES / LD_HWCAP_MASK and parse
// it.  This is the edge that talks to the real loader.
std::optional<LoaderConfig> query_running_loader(const std::string& rtld, std::string* error);

// The same, through a small on-disk cache of the loader's answer (running
// ld.so costs about half a millisecond, a third of a whole ldsearch run).
// The cache key covers everything the answer depends on: the loader file
// (device, inode, size, mtime), GLIBC_TUNABLES, LD_HWCAP_MASK, the CPU's
// feature words and OS-enabled state, and the boot id.  `dir` empty: no cache.
std::optional<LoaderConfig> query_loader_cached(const std::string& rtld, const std::string& dir, std::string* error);

// $XDG_CACHE_HOME/ldshim or $HOME/.cache/ldshim; empty when neither is set or
// LDSHIM_NO_CACHE is set.
std::string default_cache_dir();

// Bit number of an x86 legacy hwcap name ("sse2", "x86_64", "avx512_1"), or -1.
int x86_hwcap_bit(std::string_view name);

}  // namespace ldshim::loader
