// The loader-configuration rules that read this process's inputs rather
// than the loader binary: glibc.cpu.hwcap_mask from an environment block,
// and the system directories from RTLD_DI_SERINFO's list (glibc 2.36).
// Pure: the host side (host/loader_in_process.cc) gathers the inputs.
#include "loader/loader_config.h"
#include "loader/path_pool.h"
#include "loader/tokens.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ldshim::loader {
namespace {

// ld.so's number reader (_dl_strtoul): blanks, a sign, "0x" hex or a leading
// 0 for octal; it stops at the first other character and saturates a little
// early, as ld.so does.
std::uint64_t loader_strtoul(std::string_view s) {
    std::size_t i = 0;
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
    bool negative = false;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) negative = s[i++] == '-';
    if (i >= s.size() || s[i] < '0' || s[i] > '9') return 0;
    unsigned base = 10;
    if (s[i] == '0') {
        bool hex = i + 1 < s.size() && (s[i + 1] == 'x' || s[i + 1] == 'X');
        base = hex ? 16 : 8;
        if (hex) i += 2;
    }
    std::uint64_t r = 0;
    for (; i < s.size(); ++i) {
        char c = s[i];
        unsigned d;
        if (c >= '0' && c <= (base == 8 ? '7' : '9'))
            d = static_cast<unsigned>(c - '0');
        else if (base == 16 && c >= 'a' && c <= 'f')
            d = static_cast<unsigned>(c - 'a' + 10);
        else if (base == 16 && c >= 'A' && c <= 'F')
            d = static_cast<unsigned>(c - 'A' + 10);
        else
            break;
        if (r >= (UINT64_MAX - d) / base) return UINT64_MAX;
        r = r * base + d;
    }
    return negative ? ~r + 1 : r;
}

// The last glibc.cpu.hwcap_mask of one GLIBC_TUNABLES value, walked as ld.so
// walks it: NAME=VALUE pairs split on ':'; a piece without '=' is skipped; a
// final name without '=' ends the walk.
std::optional<std::uint64_t> tunable_hwcap_mask(std::string_view s) {
    std::optional<std::uint64_t> out;
    for (;;) {
        std::size_t n = s.find_first_of("=:");
        if (n == std::string_view::npos) break;
        if (s[n] == ':') {
            s.remove_prefix(n + 1);
            continue;
        }
        std::string_view name = s.substr(0, n);
        s.remove_prefix(n + 1);
        std::size_t v = s.find(':');
        if (name == "glibc.cpu.hwcap_mask") out = loader_strtoul(s.substr(0, v));
        if (v == std::string_view::npos) break;
        s.remove_prefix(v + 1);
    }
    return out;
}

// One search list as glibc's fillin_rpath builds it, spelled as
// RTLD_DI_SERINFO spells entries: without the final '/', and "." for the
// current directory.
std::vector<std::string> serinfo_list(std::string_view str, std::string_view seps, const DstValues& v,
                                      const DstPolicy& pol) {
    std::vector<std::string> dirs = expand_search_list(str, seps, v, pol);
    for (auto& d : dirs) d = d.size() < 2 ? (d.empty() ? "." : "/") : d.substr(0, d.size() - 1);
    return dirs;
}

// The tail of `serinfo` from `from` on as system directories, or nothing if
// one of them is not absolute (then this is not where they start).
std::optional<std::vector<std::string>> tail_dirs(const std::vector<std::string>& serinfo, std::size_t from) {
    std::vector<std::string> out;
    for (std::size_t i = from; i < serinfo.size(); ++i) {
        if (!serinfo[i].starts_with('/')) return std::nullopt;
        out.push_back(serinfo[i].ends_with('/') ? serinfo[i] : serinfo[i] + "/");
    }
    return out;
}

}  // namespace

std::uint64_t hwcap_mask_from_env(const char* const* envp, bool secure, std::uint16_t machine) {
    const std::uint64_t important = default_hwcap_mask(machine);
    // Both spellings are SXID_ERASE tunables: a set-id process never reads them.
    if (secure || !envp) return important;
    std::optional<std::uint64_t> tunable, alias;
    for (; *envp; ++envp) {
        std::string_view e(*envp);
        if (e.starts_with("GLIBC_TUNABLES=")) {
            if (auto m = tunable_hwcap_mask(e.substr(15))) tunable = m;
        } else if (e.starts_with("LD_HWCAP_MASK=") && !alias) {
            alias = loader_strtoul(e.substr(14));  // the alias only fills an unset tunable
        }
    }
    return tunable ? *tunable : alias ? *alias : important;
}

std::optional<std::vector<std::string>> system_dirs_from_serinfo(const std::vector<std::string>& serinfo,
                                                                 const SerinfoPrefix& p, std::string* error) {
    const std::size_t total = serinfo.size();
    // With the RPATH list first: only when that reading fails can it have been
    // dropped (glibc removes an RPATH list whose directories all turned out
    // missing, for good).
    for (bool with_rpath : {true, false}) {
        if (with_rpath && (!p.main_rpath || p.main_rpath->empty())) continue;
        for (std::size_t n = 1; n <= total; ++n) {
            auto dirs = tail_dirs(serinfo, total - n);
            if (!dirs) continue;
            // $LIB and the trusted directories depend on the candidate itself.
            DstValues v{p.origin, p.platform, dst_lib_of(*dirs)};
            DstPolicy pol{p.secure, true, &*dirs};
            std::vector<std::string> expect;
            if (with_rpath) expect = serinfo_list(*p.main_rpath, kObjectListSeparators, v, pol);
            if (p.library_path && !p.library_path->empty() && !p.secure) {
                auto l = serinfo_list(*p.library_path, kLibraryPathSeparators, v, pol);
                expect.insert(expect.end(), l.begin(), l.end());
            }
            if (expect.size() == total - n && std::equal(expect.begin(), expect.end(), serinfo.begin())) return dirs;
        }
    }
    if (error)
        *error =
            "the loader's search list (RTLD_DI_SERINFO) does not end in system directories after the "
            "main program's RPATH and LD_LIBRARY_PATH";
    return std::nullopt;
}

}  // namespace ldshim::loader
