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
#include <vector>

namespace ldshim::host {

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
    void add_lines(std::string_view maps);
    void sort();
    std::vector<Map> maps_;  // by address
};

}  // namespace ldshim::host
