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

}  // namespace

// The maps file is read in pieces and only the mappings of a file's start
// (offset 0, where an ELF object's first segment is) are kept: a large
// process has thousands of lines, and a loaded object is named by its first
// segment.
MappedFiles MappedFiles::of_this_process() {
    MappedFiles out;
    int fd = ::open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return out;
    char buf[16384];
    std::size_t have = 0;
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
        out.add_lines(text.substr(0, last_nl + 1));
        have -= last_nl + 1;
        std::memmove(buf, buf + last_nl + 1, have);
    }
    ::close(fd);
    out.add_lines(std::string_view(buf, have));
    out.sort();
    return out;
}

MappedFiles MappedFiles::parse(std::string_view maps) {
    MappedFiles out;
    out.add_lines(maps);
    out.sort();
    return out;
}

// "lo-hi perms offset major:minor inode   path"; anonymous mappings have
// inode 0 and no file to name.
void MappedFiles::add_lines(std::string_view maps) {
    constexpr std::string_view kDeleted = " (deleted)";
    while (!maps.empty()) {
        const std::size_t nl = maps.find('\n');
        std::string_view line = maps.substr(0, nl);
        maps.remove_prefix(nl == std::string_view::npos ? maps.size() : nl + 1);
        // Most lines map no file's start: their offset field is looked at
        // before anything is parsed.
        const std::size_t offset_at = line.find(' ', line.find(' ') + 1) + 1;
        if (offset_at == 0 || offset_at >= line.size() || line.substr(offset_at, 9) != "00000000 ") continue;
        Map m{};
        unsigned major = 0, minor = 0;
        std::uint64_t ino = 0, offset = 0;
        const std::size_t perms = 5;  // "rwxp "
        if (!take_number(line, m.lo, 16, '-') || !take_number(line, m.hi, 16, ' ') || line.size() < perms) continue;
        line.remove_prefix(perms);
        if (!take_number(line, offset, 16, ' ') || offset != 0 || !take_number(line, major, 16, ':') ||
            !take_number(line, minor, 16, ' ') || !take_number(line, ino, 10, ' ') || ino == 0)
            continue;
        skip_spaces(line);
        if (line.ends_with(kDeleted)) {
            line.remove_suffix(kDeleted.size());
            m.file.deleted = true;
        }
        m.file.id = {static_cast<std::uint64_t>(makedev(major, minor)), ino};
        m.file.path = std::string(line);
        maps_.push_back(std::move(m));
    }
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
