#include "host/mapped_files.h"

#include <fcntl.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>

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

// The lines of `text`, the last one too if no newline ends it.
template <class Each>
void each_line(std::string_view text, Each&& each) {
    while (!text.empty()) {
        const std::size_t nl = text.find('\n');
        each(text.substr(0, nl));
        text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    }
}

}  // namespace

std::optional<MapsLine> parse_maps_line(std::string_view line) {
    MapsLine m;
    const std::size_t perms = 5;  // "rwxp "
    if (!take_number(line, m.lo, 16, '-') || !take_number(line, m.hi, 16, ' ') || line.size() < perms)
        return std::nullopt;
    m.perms = line.substr(0, perms - 1);
    line.remove_prefix(perms);
    if (!take_number(line, m.offset, 16, ' ') || !take_number(line, m.major, 16, ':') ||
        !take_number(line, m.minor, 16, ' '))
        return std::nullopt;
    auto [end, ec] = std::from_chars(line.data(), line.data() + line.size(), m.inode, 10);
    if (ec != std::errc{} || (end != line.data() + line.size() && *end != ' ')) return std::nullopt;
    line.remove_prefix(static_cast<std::size_t>(end - line.data()));
    skip_spaces(line);
    m.path = line;
    return m;
}

bool read_own_maps(void (*each)(std::string_view, void*), void* data) {
    int fd = ::open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    char buf[16384];
    std::size_t have = 0;
    auto lines = [&](std::string_view text) { each_line(text, [&](std::string_view line) { each(line, data); }); };
    for (;;) {
        ssize_t n = ::read(fd, buf + have, sizeof buf - have);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        have += static_cast<std::size_t>(n);
        std::string_view text(buf, have);
        const std::size_t last_nl = text.rfind('\n');
        if (last_nl == std::string_view::npos) {
            if (have == sizeof buf) break;  // a line longer than the buffer: not a maps file
            continue;
        }
        lines(text.substr(0, last_nl + 1));
        have -= last_nl + 1;
        std::memmove(buf, buf + last_nl + 1, have);
    }
    ::close(fd);
    lines(std::string_view(buf, have));
    return true;
}

// Only the mappings of a file's start (offset 0, where an ELF object's first
// segment is) are kept: a loaded object is named by its first segment.
MappedFiles MappedFiles::of_this_process() {
    MappedFiles out;
    read_own_maps([&](std::string_view line) { out.add_line(line); });
    out.sort();
    return out;
}

MappedFiles MappedFiles::parse(std::string_view maps) {
    MappedFiles out;
    each_line(maps, [&](std::string_view line) { out.add_line(line); });
    out.sort();
    return out;
}

// Anonymous mappings have inode 0 and no file to name.
void MappedFiles::add_line(std::string_view line) {
    constexpr std::string_view kDeleted = " (deleted)";
    // Most lines map no file's start: their offset field is looked at
    // before anything is parsed.
    const std::size_t offset_at = line.find(' ', line.find(' ') + 1) + 1;
    if (offset_at == 0 || offset_at >= line.size() || line.substr(offset_at, 9) != "00000000 ") return;
    const std::optional<MapsLine> m = parse_maps_line(line);
    if (!m || m->offset != 0 || m->inode == 0) return;
    Map map{m->lo, m->hi, {}};
    std::string_view path = m->path;
    if (path.ends_with(kDeleted)) {
        path.remove_suffix(kDeleted.size());
        map.file.deleted = true;
    }
    map.file.id = {static_cast<std::uint64_t>(makedev(m->major, m->minor)), m->inode};
    map.file.path = std::string(path);
    maps_.push_back(std::move(map));
}

void MappedFiles::sort() {
    std::sort(maps_.begin(), maps_.end(), [](const Map& a, const Map& b) { return a.lo < b.lo; });
}

const MappedFiles::File* MappedFiles::at(std::uintptr_t addr) const {
    auto it =
        std::upper_bound(maps_.begin(), maps_.end(), addr, [](std::uintptr_t a, const Map& m) { return a < m.lo; });
    if (it == maps_.begin() || addr >= std::prev(it)->hi) return nullptr;
    return &std::prev(it)->file;
}

}  // namespace ldshim::host
