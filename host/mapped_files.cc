#include "host/mapped_files.h"

#include "host/real_fs.h"

#include <sys/sysmacros.h>

#include <algorithm>
#include <charconv>

namespace ldshim::host {
namespace {

// One hexadecimal or decimal field of a maps line, and the rest after it.
template <class T>
bool take_number(std::string_view& s, T& out, int base, char sep) {
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out, base);
    if (ec != std::errc{} || end == s.data() + s.size() || *end != sep) return false;
    s.remove_prefix(static_cast<std::size_t>(end - s.data()) + 1);
    return true;
}

void skip_spaces(std::string_view& s) {
    while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
}

}  // namespace

MappedFiles MappedFiles::of_this_process() {
    std::string text;
    if (read_whole_file("/proc/self/maps", text) != 0) return {};
    return parse(text);
}

// "lo-hi perms offset major:minor inode   path"; anonymous mappings have
// inode 0 and no file to name.
MappedFiles MappedFiles::parse(std::string_view maps) {
    MappedFiles out;
    constexpr std::string_view kDeleted = " (deleted)";
    while (!maps.empty()) {
        const std::size_t nl = maps.find('\n');
        std::string_view line = maps.substr(0, nl);
        maps.remove_prefix(nl == std::string_view::npos ? maps.size() : nl + 1);
        Map m{};
        unsigned major = 0, minor = 0;
        std::uint64_t ino = 0, offset = 0;
        const std::size_t perms = 5;  // "rwxp "
        if (!take_number(line, m.lo, 16, '-') || !take_number(line, m.hi, 16, ' ') || line.size() < perms) continue;
        line.remove_prefix(perms);
        if (!take_number(line, offset, 16, ' ') || !take_number(line, major, 16, ':') ||
            !take_number(line, minor, 16, ' ') || !take_number(line, ino, 10, ' ') || ino == 0)
            continue;
        skip_spaces(line);
        if (line.ends_with(kDeleted)) {
            line.remove_suffix(kDeleted.size());
            m.file.deleted = true;
        }
        m.file.id = {static_cast<std::uint64_t>(makedev(major, minor)), ino};
        m.file.path = std::string(line);
        out.maps_.push_back(std::move(m));
    }
    std::sort(out.maps_.begin(), out.maps_.end(), [](const Map& a, const Map& b) { return a.lo < b.lo; });
    return out;
}

const MappedFiles::File* MappedFiles::at(std::uintptr_t addr) const {
    auto it = std::upper_bound(maps_.begin(), maps_.end(), addr, [](std::uintptr_t a, const Map& m) { return a < m.lo; });
    if (it == maps_.begin() || addr >= std::prev(it)->hi) return nullptr;
    return &std::prev(it)->file;
}

}  // namespace ldshim::host
