// The filesystem as the search engine sees it.  The engine never makes a
// system call itself: it asks an Fs.  host/real_fs.h has the thin edges onto
// the kernel (RealFs, RootFs); tests inject a FakeFs (tests/unit/fake_fs.h).
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

// An opened file.  `head()` is what the loader's first read(2) returns (up
// to kHeadSize bytes); for a directory, which open(2) accepts, it is empty and
// `read_errno()` is EISDIR, exactly what glibc sees.  The rest of the file is
// read only when asked for: a search opens many large libraries and needs a
// few hundred bytes of most of them.
class FileImage {
public:
    static constexpr std::size_t kHeadSize = 832;  // glibc's struct filebuf on 64-bit

    virtual ~FileImage() = default;
    std::span<const std::byte> head() const { return head_; }
    std::uint64_t size() const { return size_; }
    FileId id() const { return id_; }
    std::uint32_t mode() const { return mode_; }
    int read_errno() const { return read_errno_; }
    // A descriptor open on the file (for libelf's on-demand reads), or -1.
    virtual int fd() const { return -1; }
    // The whole file, read on first use.  Not safe to call concurrently on
    // one image.
    virtual std::span<const std::byte> bytes() const = 0;
    // Exactly `len` bytes at `off` into `out` (pread semantics); false if the
    // range is not all inside the file.
    virtual bool read_at(std::uint64_t off, std::size_t len, std::byte* out) const;

protected:
    std::span<const std::byte> head_;
    std::uint64_t size_ = 0;
    FileId id_;
    std::uint32_t mode_ = 0;
    int read_errno_ = 0;
};

// A FileImage over bytes held in memory (tests, generated files).
class MemoryImage final : public FileImage {
public:
    MemoryImage(std::string data, FileId id, std::uint32_t mode, int read_errno = 0);
    std::span<const std::byte> bytes() const override;

private:
    std::string data_;
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

}  // namespace ldshim::loader
