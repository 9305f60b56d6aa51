// LoaderConfig as bytes: "NAME LENGTH\n" followed by LENGTH bytes for each
// field, in a fixed order; a list is its count, then one "-" field per item;
// "none" as the length is an absent optional.  Lengths, not separators, so
// that a directory name may hold any byte, newlines included.
#include "loader/loader_config.h"

#include <charconv>

namespace ldshim::loader {
namespace {

// Bump with any change of the fields or their order: an older file then
// fails to decode instead of decoding wrong.
constexpr std::string_view kHead = "ldshim loader config v3\n";

#if defined(__GLIBCXX__)
// A new field changes the size (as x86-64 lays it out): store it below, and
// bump kHead.
static_assert(machine::kOwn != machine::kX86_64 || sizeof(LoaderConfig) == 272,
              "LoaderConfig changed: update encode_config/decode_config");
#endif

void put(std::string& out, std::string_view name, std::string_view bytes) {
    out += name;
    out += ' ';
    out += std::to_string(bytes.size());
    out += '\n';
    out += bytes;
}

void put_number(std::string& out, std::string_view name, std::uint64_t n) { put(out, name, std::to_string(n)); }

void put_optional(std::string& out, std::string_view name, const std::optional<std::string>& s) {
    if (s) {
        put(out, name, *s);
        return;
    }
    out += name;
    out += " none\n";
}

void put_list(std::string& out, std::string_view name, const std::vector<std::string>& items) {
    put_number(out, name, items.size());
    for (const auto& item : items) put(out, "-", item);
}

// Reads the fields back in the order they were put; any mismatch sets
// `ok` to false for good, and every later read fails too.
class Reader {
public:
    explicit Reader(std::string_view bytes) : rest_(bytes) {}

    bool ok() const { return ok_ && rest_.empty(); }

    // nullopt for "none" (and after a failure).
    std::optional<std::string_view> field(std::string_view name) {
        if (!ok_) return std::nullopt;
        auto nl = rest_.find('\n');
        if (nl == std::string_view::npos || nl <= name.size() || !rest_.starts_with(name) || rest_[name.size()] != ' ')
            return fail();
        std::string_view len = rest_.substr(name.size() + 1, nl - name.size() - 1);
        rest_.remove_prefix(nl + 1);
        if (len == "none") return std::nullopt;
        std::size_t n = 0;
        if (!parse_number(len, n) || n > rest_.size()) return fail();
        std::string_view bytes = rest_.substr(0, n);
        rest_.remove_prefix(n);
        return bytes;
    }

    std::string text(std::string_view name) {
        auto f = field(name);
        if (!f) fail();
        return f ? std::string(*f) : std::string();
    }

    std::uint64_t number(std::string_view name) {
        auto f = field(name);
        std::uint64_t n = 0;
        if (!f || !parse_number(*f, n)) fail();
        return n;
    }

    bool flag(std::string_view name) {
        std::uint64_t n = number(name);
        if (n > 1) fail();
        return n == 1;
    }

    std::optional<std::string> optional_text(std::string_view name) {
        auto f = field(name);
        if (!f) return std::nullopt;
        return std::string(*f);
    }

    std::vector<std::string> list(std::string_view name) {
        std::uint64_t count = number(name);
        std::vector<std::string> items;
        // Each item takes at least four bytes ("- 0\n"): a count beyond that
        // is a corrupt file, not a reason to reserve memory.
        if (count > rest_.size() / 4) {
            fail();
            return items;
        }
        for (std::uint64_t i = 0; i < count && ok_; ++i) items.push_back(text("-"));
        return items;
    }

private:
    template <typename N>
    static bool parse_number(std::string_view s, N& n) {
        if (s.empty() || s.size() > 20) return false;
        auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
        return ec == std::errc() && end == s.data() + s.size();
    }

    std::nullopt_t fail() {
        ok_ = false;
        return std::nullopt;
    }

    std::string_view rest_;
    bool ok_ = true;
};

}  // namespace

std::string encode_config(const LoaderConfig& cfg) {
    std::string out(kHead);
    put_number(out, "root_dir_stat_bug", cfg.behaviour.root_dir_stat_bug);
    put_number(out, "non_directory_ends_list", cfg.behaviour.non_directory_ends_list);
    put_number(out, "explains_candidates", cfg.behaviour.explains_candidates);
    put_number(out, "refuses_pie", cfg.behaviour.refuses_pie);
    put_number(out, "elf_class", cfg.elf_class);
    put_number(out, "elf_data", cfg.elf_data);
    put_number(out, "machine", cfg.machine);
    put(out, "rtld_path", cfg.rtld_path);
    put_list(out, "system_dirs", cfg.system_dirs);
    put_list(out, "subdirs", cfg.subdirs);
    put_list(out, "hwcaps_active", cfg.hwcaps_active);
    put_number(out, "isa_levels", cfg.isa_levels);
    put_optional(out, "platform", cfg.platform);
    put(out, "dst_lib", cfg.dst_lib);
    put_number(out, "hwcap_searched", cfg.hwcap_searched);
    put(out, "cache_path", cfg.cache_path);
    put(out, "cache_label", cfg.cache_label);
    put_number(out, "inhibit_cache", cfg.inhibit_cache);
    return out;
}

std::optional<LoaderConfig> decode_config(std::string_view bytes) {
    if (!bytes.starts_with(kHead)) return std::nullopt;
    Reader in(bytes.substr(kHead.size()));
    LoaderConfig cfg;
    cfg.behaviour.root_dir_stat_bug = in.flag("root_dir_stat_bug");
    cfg.behaviour.non_directory_ends_list = in.flag("non_directory_ends_list");
    cfg.behaviour.explains_candidates = in.flag("explains_candidates");
    cfg.behaviour.refuses_pie = in.flag("refuses_pie");
    std::uint64_t elf_class = in.number("elf_class");
    std::uint64_t elf_data = in.number("elf_data");
    std::uint64_t machine = in.number("machine");
    cfg.elf_class = static_cast<std::uint8_t>(elf_class);
    cfg.elf_data = static_cast<std::uint8_t>(elf_data);
    cfg.machine = static_cast<std::uint16_t>(machine);
    cfg.rtld_path = in.text("rtld_path");
    cfg.system_dirs = in.list("system_dirs");
    cfg.subdirs = in.list("subdirs");
    cfg.hwcaps_active = in.list("hwcaps_active");
    std::uint64_t isa = in.number("isa_levels");
    cfg.isa_levels = static_cast<std::uint32_t>(isa);
    cfg.platform = in.optional_text("platform");
    cfg.dst_lib = in.text("dst_lib");
    cfg.hwcap_searched = in.number("hwcap_searched");
    cfg.cache_path = in.text("cache_path");
    cfg.cache_label = in.text("cache_label");
    cfg.inhibit_cache = in.flag("inhibit_cache");
    // What every configuration the parsers build holds: the directory itself
    // is the last subdirectory tried.
    if (!in.ok() || isa > 0xffffffffu || elf_class > 0xff || elf_data > 0xff || machine > 0xffff ||
        cfg.subdirs.empty() || !cfg.subdirs.back().empty())
        return std::nullopt;
    return cfg;
}

}  // namespace ldshim::loader
