// The facts about the running loader that the search depends on: system
// directories, hwcaps subdirectories, $LIB, $PLATFORM, hwcap bits.  They are
// read from the loader itself, never hard-coded, so that the CPU,
// GLIBC_TUNABLES and LD_HWCAP_MASK of the caller are honoured: ldsearch asks
// a loader binary (`ld.so --help`, for any root or machine:
// host/loader_query.h); the runtime reads its own process's loader in place
// (host/loader_in_process.h).  This file holds the data and the rules; the
// host folder gathers the inputs.
#pragma once

#include "machine/machine.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ldshim::loader {

// glibc's x86 legacy hwcap bits that can select a subdirectory.
inline constexpr std::uint64_t kHwcapX86_64 = 1u << 1;
inline constexpr std::uint64_t kHwcapAvx512_1 = 1u << 2;
// aarch64's one (the kernel's AT_HWCAP bit HWCAP_ATOMICS, "atomics").
inline constexpr std::uint64_t kHwcapAarch64Atomics = 1u << 8;

// x86-64's ISA levels as glibc-hwcaps names them, best first, each with its
// bit in LoaderConfig::isa_levels (ld.so.cache's ISA level bits; 1 is the
// baseline, which has no name).  A level implies every level below it.
struct IsaLevel {
    std::string_view name;
    std::uint32_t bit;
};
inline constexpr IsaLevel kIsaLevels[] = {{"x86-64-v4", 8u}, {"x86-64-v3", 4u}, {"x86-64-v2", 2u}};
// The bit of a glibc-hwcaps name that is an ISA level; 0 for any other name.
constexpr std::uint32_t isa_level_bit(std::string_view name) {
    for (const auto& l : kIsaLevels)
        if (l.name == name) return l.bit;
    return 0;
}

// Search behaviour that differs between the glibc versions ldshim models,
// as the loader itself shows it (loader_probe.cc) or its version implies.
// The defaults are glibc 2.36's.
struct LoaderBehaviour {
    // Before 2.38 (bug 30435) a directory is stat'ed with its last character
    // cut, so "/" is stat'ed as "" and dropped as missing.
    bool root_dir_stat_bug = true;
    // Before 2.39 (bug 31035) ENOTDIR from an element (a file named as a
    // directory) ends the search of that list, like any error but ENOENT
    // and EACCES; from 2.39 the search goes on.
    bool non_directory_ends_list = true;
    // From 2.43 (bug 25669) LD_DEBUG=libs says why each candidate it could
    // not use failed, on a line of its own after it: "    (no such file)",
    // "    (incompatible ELF class)", and so on.
    bool explains_candidates = false;
    // From 2.30 (bug 24323; RHEL 8's 2.28 carries the fix) dlopen and
    // LD_PRELOAD refuse a position-independent executable; before, they map
    // it like any shared object.
    bool refuses_pie = true;

    bool operator==(const LoaderBehaviour&) const = default;
};

// What only the version of a glibc release tells (shared/reference/
// glibc-versions.md T2a, T4, T6): each rule from the upstream release that
// changed it; no distribution is known to have moved one (RHEL 8 and 9 carry
// neither bug fix, SLES 15 SP6's 2.38 the first only, as upstream).  The PIE
// refusal is here as upstream has it, but RHEL 8 moved it: every user reads
// it from the loader instead (loader_refuses_pie).
struct GlibcRelease {
    int minor = 0;  // 2.MINOR
    LoaderBehaviour behaviour;
    bool legacy_subdirs = false;        // legacy hwcap subdirectories searched (removed in 2.37)
    bool legacy_cache_entries = false;  // ld.so.cache entries with legacy hwcap bits used (skipped from 2.40)
};
// nullopt for a version outside 2.28 to 2.43, the loaders ldshim is checked
// against, or not of the form "2.N".
std::optional<GlibcRelease> glibc_release(std::string_view version);

// Whether a loader whose readable bytes (its file, or its mapped segments)
// contain `image` refuses position-independent executables: the message it
// refuses them with is there exactly when the check is (any release,
// whatever a distribution backported).
bool loader_refuses_pie(std::string_view image);

struct LoaderConfig {
    LoaderBehaviour behaviour;
    // The objects the loader accepts, as its own file's ELF header states
    // them (glibc's open_verify skips any other class or machine).
    std::uint8_t elf_class = 2;                // ELFCLASS64
    std::uint8_t elf_data = 1;                 // ELFDATA2LSB
    std::uint16_t machine = machine::kX86_64;  // e_machine
    std::string rtld_path = machine::loader_path(machine::kX86_64);
    std::vector<std::string> system_dirs;  // each ends in '/'
    // Every subdirectory prefix tried inside a search directory, in order;
    // each ends in '/' except the last, which is "" (the directory itself).
    std::vector<std::string> subdirs;
    // Active glibc-hwcaps names in priority order (prepended names first).
    std::vector<std::string> hwcaps_active;
    // x86-64 ISA levels the CPU supports, as cache hwcap bits (1 = baseline,
    // 2 = v2, 4 = v3, 8 = v4).
    std::uint32_t isa_levels = 1;
    std::optional<std::string> platform;           // $PLATFORM (AT_PLATFORM or glibc's override)
    std::string dst_lib;                           // $LIB
    std::uint64_t hwcap_searched = 0;              // dl_hwcap & hwcap_mask
    std::string cache_path = "/etc/ld.so.cache";   // the file that is read
    std::string cache_label = "/etc/ld.so.cache";  // what LD_DEBUG prints
    bool inhibit_cache = false;

    bool operator==(const LoaderConfig&) const = default;
};

// A configuration as bytes and back, for a cache of the loader's answer
// (loader_config_codec.cc): every field, each with its length, so that a
// cache hit parses none of the loader's text.  decode_config returns
// nullopt for anything encode_config did not write (a truncated, foreign or
// older file); then the loader is asked afresh.
std::string encode_config(const LoaderConfig& cfg);
std::optional<LoaderConfig> decode_config(std::string_view bytes);

// Build the subdirectory list: glibc-hwcaps names, then (glibc 2.36) the
// legacy power set of `legacy` (hwcap names in ascending bit order, then the
// platform, then "tls"), ending with "".
std::vector<std::string> make_subdirs(const std::vector<std::string>& hwcaps_active,
                                      const std::vector<std::string>& legacy);

// Parse the text of `ld.so --help` (glibc 2.33 … 2.36 layout, and later ones
// that lack the legacy section).  On failure returns nullopt and sets *error.
std::optional<LoaderConfig> parse_ld_so_help(std::string_view text, std::string* error);

// Bit number of an x86 legacy hwcap name ("sse2", "x86_64", "avx512_1"), or -1.
int x86_hwcap_bit(std::string_view name);

// Bit number of a legacy hwcap name any modelled loader prints: x86-64's,
// or aarch64's one (HWCAP_IMPORTANT: "atomics", the kernel's AT_HWCAP bit
// 8).  The loader names its subdirectories but never their bits, which the
// ld.so.cache entries carry; the names do not overlap between machines.
int legacy_hwcap_bit(std::string_view name);

// Reads the target of a loader from the start of its file (the ELF
// identification and e_machine) into `cfg`; false when `head` is no ELF
// header.
bool read_loader_machine(std::string_view head, LoaderConfig& cfg);

// $LIB as the system directories imply it: the first one without its
// slashes (lib/x86_64-linux-gnu on Debian, lib64 upstream).  No loader prints
// $LIB in --help; this holds for the Debian and upstream layouts.
std::string dst_lib_of(const std::vector<std::string>& system_dirs);

// The configuration `ld.so --help` describes, from its parts: the system
// directories, the supported ISA levels (isa_levels bits), $PLATFORM and the
// searched legacy hwcap bits (glibc 2.36: they and the platform give the
// legacy subdirectories), for a loader of `machine` (its e_machine, which
// names the bits).  $LIB follows the first system directory, as in
// parse_ld_so_help.
LoaderConfig assemble_config(std::vector<std::string> system_dirs, std::uint32_t isa_levels,
                             std::optional<std::string> platform, std::uint64_t hwcap_searched,
                             std::uint16_t machine = machine::kX86_64);

// The legacy hwcap name a loader of `machine` gives `bit` in its
// subdirectories, or "" for a bit ldshim does not name: x86-64's three, and
// aarch64's "atomics" (the only bit in its default mask).
std::string_view legacy_hwcap_name(std::uint16_t machine, int bit);

// The hwcap bits ldshim can name for `machine` (legacy_hwcap_name), and
// the loader's default glibc.cpu.hwcap_mask there (HWCAP_IMPORTANT:
// x86_64 | avx512_1 on x86-64, atomics on aarch64); 0 for any other machine.
std::uint64_t named_hwcap_bits(std::uint16_t machine);
std::uint64_t default_hwcap_mask(std::uint16_t machine);

// ---- What a loader's own search shows (loader_probe.cc) ----
//
// The host runs the loader with LD_DEBUG=libs and probe_inputs()'s LD_PRELOAD
// and LD_LIBRARY_PATH, in the directory of its own file, listing itself
// (host/loader_query.cc).  The two failed lookups' search lines state the
// subdirectories it tries in every search directory, its system directories,
// its cache file, through two DST elements $PLATFORM and $LIB, and through
// "/" and a relative element that is a file, its LoaderBehaviour.
struct ProbeInputs {
    std::string preload, library_path;
};
// `rtld_file_name`: the loader's file name, a file in the directory it runs in.
ProbeInputs probe_inputs(std::string_view rtld_file_name);

struct ProbeFacts {
    std::vector<std::string> subdirs;      // as LoaderConfig::subdirs
    std::vector<std::string> system_dirs;  // each ends in '/'
    std::optional<std::string> platform;   // $PLATFORM, if the loader expands it
    std::optional<std::string> dst_lib;    // $LIB
    std::string cache_path;                // what "search cache=" names
    LoaderBehaviour behaviour;
};

std::optional<ProbeFacts> parse_loader_probe(std::string_view text, std::string* error);

// The configuration from both answers a loader gives: `help` is its --help
// text (nullopt when it has none: glibc before 2.33), `probe` the probe's
// debug output.  --help says which glibc-hwcaps levels are supported and
// which hwcap bits are searched; the probe says $LIB, $PLATFORM when --help
// does not, and, without --help, everything the search needs.
std::optional<LoaderConfig> config_from_answers(std::optional<std::string_view> help, std::string_view probe,
                                                std::string* error);

// ---- Rules over this process's inputs (loader_config_env.cc) ----
//
// The host side (host/loader_in_process.h) gathers the inputs.

// glibc.cpu.hwcap_mask as ld.so 2.36 settles it from an environment block:
// the last GLIBC_TUNABLES setting wins over LD_HWCAP_MASK (its first
// occurrence); the default is `machine`'s HWCAP_IMPORTANT
// (default_hwcap_mask: 6 on x86-64, 0x100 on aarch64).
// Both are ignored for set-id (AT_SECURE) processes.  Numbers are read like
// ld.so's own _dl_strtoul (0x hex, leading-0 octal, saturation).
std::uint64_t hwcap_mask_from_env(const char* const* envp, bool secure, std::uint16_t machine = machine::kX86_64);

// What precedes the system directories in RTLD_DI_SERINFO of ld.so's own
// link map: the main program's RPATH list, then the LD_LIBRARY_PATH list.
struct SerinfoPrefix {
    std::optional<std::string> main_rpath;    // effective DT_RPATH (none when DT_RUNPATH exists)
    std::optional<std::string> library_path;  // LD_LIBRARY_PATH as ld.so read it (the last one)
    std::optional<std::string> origin;        // the main program's $ORIGIN
    std::optional<std::string> platform;      // $PLATFORM
    bool secure = false;                      // AT_SECURE
};

// The system directories (each ending in '/') from that list: the tail left
// once the prefix, rebuilt from `p` with glibc's list rules, matches the
// head exactly (with the RPATH list first, then without it: glibc drops an
// RPATH list whose directories all turned out missing).  nullopt, with the
// reason, when no reading accounts for the whole list.
std::optional<std::vector<std::string>> system_dirs_from_serinfo(const std::vector<std::string>& serinfo,
                                                                 const SerinfoPrefix& p, std::string* error);

}  // namespace ldshim::loader
