// Which file this process maps where, as the kernel records it
// (/proc/self/maps): the (st_dev, st_ino) and path of the file whose start
// (offset 0) a mapping holds, which stay those of the file the loader opened
// after its path was removed, or made to name another file.
#pragma once

#include "loader/fs.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace ldshim::host {

// One line of a maps file, "lo-hi perms offset major:minor inode   path",
// as viewed in the text it was parsed from.
struct MapsLine {
    std::uintptr_t lo = 0, hi = 0;
    std::string_view perms;  // "rwxp": each letter or '-'
    std::uint64_t offset = 0;
    unsigned major = 0, minor = 0;
    std::uint64_t inode = 0;  // 0: no file
    std::string_view path;    // as the kernel prints it (" (deleted)" kept); empty: none
};
// The fields of one line (without its newline); nullopt where it is no maps
// line.  The line may end right after the inode (qemu-user's anonymous
// mappings do).
std::optional<MapsLine> parse_maps_line(std::string_view line);

// The one reader of this process's /proc/self/maps: each(line, data) for
// each line (without its newline), read in pieces, never the whole file at
// once: a large process has thousands of lines.  False where it cannot be
// opened.
bool read_own_maps(void (*each)(std::string_view line, void* data), void* data);
template <class Each>
bool read_own_maps(Each&& each) {
    return read_own_maps(
        [](std::string_view line, void* d) { (*static_cast<std::remove_reference_t<Each>*>(d))(line); }, &each);
}

class MappedFiles {
public:
    // This process's mappings now; empty when /proc/self/maps cannot be read.
    static MappedFiles of_this_process();
    // The same from the text of a maps file.
    static MappedFiles parse(std::string_view maps);

    struct File {
        loader::FileId id;
        std::string path;  // as the kernel prints it (" (deleted)" removed)
        bool deleted = false;
    };
    // The file whose start is mapped at `addr`, if one is (an object's
    // first segment maps its file from offset 0).
    const File* at(std::uintptr_t addr) const;
    bool empty() const { return maps_.empty(); }

private:
    struct Map {
        std::uintptr_t lo, hi;
        File file;
    };
    void add_line(std::string_view line);
    void sort();
    std::vector<Map> maps_;  // by address
};

}  // namespace ldshim::host
