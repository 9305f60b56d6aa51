#include "loader/loader_config.h"

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <memory>

namespace ldshim::loader {
namespace {

std::vector<std::string_view> lines_of(std::string_view text) {
    std::vector<std::string_view> out;
    while (!text.empty()) {
        auto nl = text.find('\n');
        out.push_back(text.substr(0, nl));
        if (nl == std::string_view::npos) break;
        text.remove_prefix(nl + 1);
    }
    return out;
}

// "  NAME (tag, tag)" -> NAME and whether `tag` is listed.
struct HelpItem {
    std::string_view name;
    std::string_view tags;
    bool has(std::string_view t) const {
        for (std::size_t p = tags.find(t); p != std::string_view::npos; p = tags.find(t, p + 1)) {
            bool start = p == 0 || tags[p - 1] == ' ' || tags[p - 1] == ';' || tags[p - 1] == ',';
            bool end = p + t.size() == tags.size() || tags[p + t.size()] == ',' || tags[p + t.size()] == ';';
            if (start && end) return true;
        }
        return false;
    }
};

HelpItem parse_item(std::string_view line) {
    line.remove_prefix(std::min<std::size_t>(2, line.size()));
    HelpItem it;
    auto sp = line.find(" (");
    if (sp == std::string_view::npos) {
        it.name = line;
        return it;
    }
    it.name = line.substr(0, sp);
    auto t = line.substr(sp + 2);
    if (!t.empty() && t.back() == ')') t.remove_suffix(1);
    it.tags = t;
    return it;
}

constexpr std::string_view kX86HwcapNames[] = {"sse2", "x86_64", "avx512_1"};
// aarch64: the kernel's AT_HWCAP bit names (its /proc/cpuinfo "Features"),
// as glibc's _dl_aarch64_cap_flags holds them; 2.29's table has these 28,
// later ones append.  The default mask holds "atomics" alone; an
// LD_HWCAP_MASK of more bits searches a subdirectory per named bit set.
constexpr std::string_view kAarch64HwcapNames[] = {
    "fp",      "asimd",  "evtstrm",  "aes",      "pmull", "sha1",  "sha2",   "crc32", "atomics", "fphp",
    "asimdhp", "cpuid",  "asimdrdm", "jscvt",    "fcma",  "lrcpc", "dcpop",  "sha3",  "sm3",     "sm4",
    "asimddp", "sha512", "sve",      "asimdfhm", "dit",   "uscat", "ilrcpc", "flagm"};

}  // namespace

// (ld.so --list-diagnostics prints the real value, dl_dst_lib.)
std::string dst_lib_of(const std::vector<std::string>& system_dirs) {
    if (system_dirs.empty()) return {};
    std::string_view first = system_dirs.front();
    while (first.starts_with('/')) first.remove_prefix(1);
    while (first.ends_with('/')) first.remove_suffix(1);
    return std::string(first);
}

int x86_hwcap_bit(std::string_view name) {
    for (int i = 0; i < 3; ++i)
        if (kX86HwcapNames[i] == name) return i;
    return -1;
}

int legacy_hwcap_bit(std::string_view name) {
    // The two machines' names differ, so a name alone says its bit.
    for (int i = 0; i < static_cast<int>(std::size(kAarch64HwcapNames)); ++i)
        if (kAarch64HwcapNames[i] == name) return i;
    return x86_hwcap_bit(name);
}

bool read_loader_machine(std::string_view head, LoaderConfig& cfg) {
    // e_ident (16 bytes), e_type (2), e_machine (2) in the file's byte order.
    if (head.size() < 20 || head[0] != '\x7f' || head.substr(1, 3) != "ELF") return false;
    auto byte = [&](std::size_t i) { return static_cast<std::uint8_t>(head[i]); };
    cfg.elf_class = byte(4);
    cfg.elf_data = byte(5);
    cfg.machine = cfg.elf_data == 2 ? static_cast<std::uint16_t>(byte(18) << 8 | byte(19))
                                    : static_cast<std::uint16_t>(byte(19) << 8 | byte(18));
    return true;
}

std::optional<GlibcRelease> glibc_release(std::string_view version) {
    if (!version.starts_with("2.")) return std::nullopt;
    version.remove_prefix(2);
    int minor = 0;
    auto [end, ec] = std::from_chars(version.data(), version.data() + version.size(), minor);
    if (ec != std::errc() || end != version.data() + version.size() || minor < 28 || minor > 43) return std::nullopt;
    GlibcRelease r;
    r.minor = minor;
    r.behaviour.root_dir_stat_bug = minor < 38;        // bug 30435
    r.behaviour.non_directory_ends_list = minor < 39;  // bug 31035
    r.behaviour.explains_candidates = minor >= 43;     // bug 25669
    r.behaviour.refuses_pie = minor >= 30;             // bug 24323
    r.legacy_subdirs = minor < 37;
    r.legacy_cache_entries = minor < 40;
    return r;
}

bool loader_refuses_pie(std::string_view image) {
    return image.find("cannot dynamically load position-independent executable") != std::string_view::npos;
}

std::string_view legacy_hwcap_name(std::uint16_t machine, int bit) {
    if (machine == machine::kX86_64 && bit >= 0 && bit < static_cast<int>(std::size(kX86HwcapNames)))
        return kX86HwcapNames[bit];
    if (machine == machine::kAarch64 && bit >= 0 && bit < static_cast<int>(std::size(kAarch64HwcapNames)))
        return kAarch64HwcapNames[bit];
    return {};
}

std::uint64_t named_hwcap_bits(std::uint16_t machine) {
    if (machine == machine::kX86_64) return (std::uint64_t{1} << std::size(kX86HwcapNames)) - 1;
    if (machine == machine::kAarch64) return (std::uint64_t{1} << std::size(kAarch64HwcapNames)) - 1;
    return 0;
}

std::uint64_t default_hwcap_mask(std::uint16_t machine) {
    if (machine == machine::kX86_64) return kHwcapX86_64 | kHwcapAvx512_1;
    if (machine == machine::kAarch64) return kHwcapAarch64Atomics;
    return 0;
}

LoaderConfig assemble_config(std::vector<std::string> system_dirs, std::uint32_t isa_levels,
                             std::optional<std::string> platform, std::uint64_t hwcap_searched, std::uint16_t machine) {
    LoaderConfig cfg;
    cfg.machine = machine;
    cfg.system_dirs = std::move(system_dirs);
    cfg.dst_lib = dst_lib_of(cfg.system_dirs);
    cfg.isa_levels = isa_levels | 1u;
    // Built-in glibc-hwcaps names, best first; the levels are cumulative.
    for (const auto& level : kIsaLevels)
        if (isa_levels & level.bit) cfg.hwcaps_active.emplace_back(level.name);
    cfg.hwcap_searched = hwcap_searched;
    // Legacy strings (2.36): hwcap names in ascending bit order, the
    // platform, then "tls".  A bit without a name here has none in the
    // model; the runtime declines such a loader (host/loader_in_process.cc).
    std::vector<std::string> legacy;
    for (int bit = 0; bit < 64; ++bit) {
        auto name = legacy_hwcap_name(machine, bit);
        if ((hwcap_searched & (std::uint64_t{1} << bit)) && !name.empty()) legacy.emplace_back(name);
    }
    if (platform) legacy.push_back(*platform);
    legacy.emplace_back("tls");
    cfg.platform = std::move(platform);
    cfg.subdirs = make_subdirs(cfg.hwcaps_active, legacy);
    return cfg;
}

std::vector<std::string> make_subdirs(const std::vector<std::string>& hwcaps_active,
                                      const std::vector<std::string>& legacy) {
    std::vector<std::string> out;
    for (const auto& h : hwcaps_active) out.push_back("glibc-hwcaps/" + h + "/");
    // Power set from the full combination down to the empty one; within a
    // combination the highest index comes first (glibc's _dl_important_hwcaps).
    std::size_t k = legacy.size();
    if (k > 16) k = 16;  // glibc refuses absurd counts; so do we
    for (std::size_t m = (std::size_t{1} << k); m-- > 0;) {
        std::string s;
        for (std::size_t j = k; j-- > 0;)
            if (m & (std::size_t{1} << j)) s += legacy[j] + "/";
        out.push_back(std::move(s));
    }
    return out;
}

std::optional<LoaderConfig> parse_ld_so_help(std::string_view text, std::string* error) {
    enum class Section { none, search, hwcaps, legacy } sec = Section::none;
    LoaderConfig cfg;
    bool saw_search = false;
    bool saw_legacy = false;
    std::optional<std::string> platform;
    std::vector<std::pair<int, std::string>> hwcap_bits;  // searched legacy hwcaps
    for (auto line : lines_of(text)) {
        if (line.starts_with("Shared library search path:")) {
            sec = Section::search;
            saw_search = true;
            continue;
        }
        if (line.starts_with("Subdirectories of glibc-hwcaps directories")) {
            sec = Section::hwcaps;
            continue;
        }
        if (line.starts_with("Legacy HWCAP subdirectories")) {
            sec = Section::legacy;
            saw_legacy = true;
            continue;
        }
        if (!line.starts_with("  ")) {
            if (!line.empty()) sec = Section::none;
            continue;
        }
        auto it = parse_item(line);
        switch (sec) {
            case Section::search:
                // The system list is the last run of "system search path"
                // entries: an LD_LIBRARY_PATH entry that is also a system
                // directory carries that label too, ahead of the cache line.
                if (it.tags == "system search path") {
                    std::string d(it.name);
                    if (d.empty() || d.back() != '/') d += '/';
                    cfg.system_dirs.push_back(std::move(d));
                } else {
                    cfg.system_dirs.clear();
                }
                break;
            case Section::hwcaps:
                if (it.has("searched")) cfg.hwcaps_active.emplace_back(it.name);
                if (it.has("supported")) cfg.isa_levels |= isa_level_bit(it.name);
                break;
            case Section::legacy:
                if (it.has("AT_PLATFORM")) {
                    platform = std::string(it.name);
                } else if (it.name == "tls") {
                    // always last in the list of strings
                } else if (it.has("searched")) {
                    int bit = legacy_hwcap_bit(it.name);
                    hwcap_bits.emplace_back(bit, std::string(it.name));
                    if (bit >= 0) cfg.hwcap_searched |= std::uint64_t{1} << bit;
                }
                break;
            case Section::none: break;
        }
    }
    if (!saw_search || cfg.system_dirs.empty()) {
        if (error) *error = "no system search path in the loader's --help output";
        return std::nullopt;
    }
    cfg.platform = platform;
    cfg.dst_lib = dst_lib_of(cfg.system_dirs);

    std::vector<std::string> legacy;
    if (saw_legacy) {
        // --help lists hwcap bits from bit 63 down; the search uses ascending order.
        for (auto it = hwcap_bits.rbegin(); it != hwcap_bits.rend(); ++it) legacy.push_back(it->second);
        if (platform) legacy.push_back(*platform);
        legacy.push_back("tls");
    }
    cfg.subdirs = make_subdirs(cfg.hwcaps_active, legacy);
    return cfg;
}

}  // namespace ldshim::loader
