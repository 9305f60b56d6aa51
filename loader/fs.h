// The filesystem as the search engine sees it.  The engine never makes a
// system call itself: it asks an Fs.  RealFs is the thin edge onto the
// kernel; tests inject a FakeFs (tests/unit/fake_fs.h).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

namespace ldshim::loader {

// (st_dev, st_ino): how glibc decides that two paths are the same object.
struct FileId {
    std::uint64_t dev = 0;
    std::uint64_t ino = 0;
    bool valid() const { return dev != 0 || ino != 0; }
    friend bool operator==(const FileId&, const FileId&) = default;
};

// The bytes of an opened file.  For a directory (which open(2) accepts)
// `bytes` is empty and `read_errno` is EISDIR, exactly what glibc's read()
// would have reported.
class FileImage {
public:
    virtual ~FileImage() = default;
    std::span<const std::byte> bytes() const { return bytes_; }
    FileId id() const { return id_; }
    std::uint32_t mode() const { return mode_; }
    int read_errno() const { return read_errno_; }

protected:
    std::span<const std::byte> bytes_;
    FileId id_;
    std::uint32_t mode_ = 0;
    int read_errno_ = 0;
};

struct OpenResult {
    std::shared_ptr<const FileImage> image;  // null on failure
    int error = 0;                           // errno of open(2) on failure
};

class Fs {
public:
    virtual ~Fs() = default;
    // open(path, O_RDONLY) followed by reading the file.
    virtual OpenResult open(const std::string& path) = 0;
    // stat(2): error is its errno (0 on success); is_dir tells what it found.
    struct StatResult {
        int error = 0;
        bool is_dir = false;
    };
    virtual StatResult stat(const std::string& path) = 0;
    // getcwd(); empty if it cannot be determined.
    virtual std::string cwd() = 0;
    // realpath(3); nullopt if it fails.
    virtual std::optional<std::string> realpath(const std::string& path) = 0;
};

// The real filesystem.  Regular files are mapped read-only; FIFOs and devices
// are opened non-blocking and read up to one page, so that a hostile search
// path cannot hang the caller.
class RealFs final : public Fs {
public:
    OpenResult open(const std::string& path) override;
    StatResult stat(const std::string& path) override;
    std::string cwd() override;
    std::optional<std::string> realpath(const std::string& path) override;
};

}  // namespace ldshim::loader
