// Dynamic string tokens ($ORIGIN, $PLATFORM, $LIB), with glibc's recognition
// rules (elf/dl-load.c is_dst / _dl_dst_substitute) and its secure-mode rules.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ldshim::loader {

struct DstValues {
    std::optional<std::string> origin;    // owner's $ORIGIN; nullopt = unknown
    std::optional<std::string> platform;  // $PLATFORM; nullopt = none
    std::string lib;                      // $LIB
};

struct DstPolicy {
    bool secure = false;                                     // AT_SECURE
    bool owner_is_main = false;                              // the owner is the main program (trusted-dir check)
    const std::vector<std::string>* trusted_dirs = nullptr;  // system dirs, with '/'
};

// Number of recognised tokens in `s` (any position, any policy).
std::size_t count_dsts(std::string_view s);

// Why an element was dropped, for explanations.
enum class DstDrop { none, unknown_value, secure_position, untrusted_dir };
// Why an element was dropped, for people.
const char* dst_drop_text(DstDrop d);
// The elements of a list that expand to nothing, with the reason for each.
using DstDrops = std::vector<std::pair<std::string, DstDrop>>;

// Expand every token of one element.  Returns "" when glibc would drop the
// element (an unknown value, $ORIGIN not allowed in secure mode, or a secure
// $ORIGIN path outside the trusted directories); `why` says which.
std::string substitute_dsts(std::string_view input, const DstValues& values, const DstPolicy& policy,
                            DstDrop* why = nullptr);

// glibc's is_trusted_path_normalize(): collapse "//", "/./", "/../" and test
// whether the result lies inside one of `dirs` (each ending in '/').
bool is_trusted_path(std::string_view path, const std::vector<std::string>& dirs);

}  // namespace ldshim::loader
