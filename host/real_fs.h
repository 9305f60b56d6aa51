// The Fs the search runs on outside tests: the kernel's filesystem, or a
// sysroot inside it.  The only code that makes system calls for the search.
#pragma once

#include "loader/fs.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace ldshim::host {

using loader::Fs;
using loader::OpenResult;

// What tells whether a file changed since it was read: its identity, size,
// and modification and status-change times (a write moves the first; a
// chmod, chown, ACL change, rename or new link moves the second).
struct FileVersion {
    loader::FileId id;
    std::uint64_t size = 0;
    std::int64_t mtime_ns = 0;
    std::int64_t ctime_ns = 0;
    std::uint32_t mode = 0;
    friend bool operator==(const FileVersion&, const FileVersion&) = default;
};

// The real filesystem.  Files are opened non-blocking (a FIFO on a search
// path cannot hang the caller) and read with pread(2) on demand.
class RealFs final : public Fs {
public:
    OpenResult open(const std::string& path) override;
    // open() that also says which version of the file it read.
    static OpenResult open_versioned(const std::string& path, FileVersion* version);
    // The version of the file at `path` now (one stat), or nullopt.
    static std::optional<FileVersion> version(const std::string& path);
    StatResult stat(const std::string& path) override;
    std::string cwd() override;
    std::optional<std::string> realpath(const std::string& path) override;
};

// Exactly `len` bytes at `off` (pread(2), resumed after EINTR and short
// reads); false at end of file or on an error.
bool pread_exactly(int fd, std::uint64_t off, std::size_t len, std::byte* out);

// All of `bytes` to `fd` (write(2), resumed after EINTR and short writes);
// false on an error, with errno set.
bool write_all(int fd, std::string_view bytes);

// The whole file at `path` into `out`; 0, or the errno of what failed.
// Plain system calls: a file stream's first use costs the locale set-up, and
// linking one brings libstdc++'s locale machinery into a static binary.
int read_whole_file(const std::string& path, std::string& out);

// Replaces the file at `path` by `bytes`, through a temporary file beside it
// and rename(2), so that a reader sees the old file or the new one, never a
// part.  False (and nothing left behind) on any error.
bool replace_file(const std::string& path, std::string_view bytes);

// RealFs for an engine that searches for the same libraries again and again
// (the runtime resolver: a plugin loaded and unloaded in a loop).  An ELF
// file opened once is kept (host/kept_image.h) with its version; opening the
// same path again costs one stat(2) while the version is unchanged, so the
// file is not opened twice for each dlopen (once by the search, once by
// glibc).  Only world-readable regular files are kept: for those an open
// by any credentials succeeds wherever the stat does (a named-user ACL entry
// that denies one user a world-readable file is not modelled).  A path that
// has no kept file is opened as by RealFs, so a file that appears in an
// earlier directory is found at once.  Not thread-safe: one engine's.
class RememberingFs final : public Fs {
public:
    OpenResult open(const std::string& path) override;
    StatResult stat(const std::string& path) override { return real_.stat(path); }
    std::string cwd() override { return real_.cwd(); }
    std::optional<std::string> realpath(const std::string& path) override { return real_.realpath(path); }

private:
    struct Kept {
        FileVersion version;
        std::shared_ptr<const loader::FileImage> image;
    };
    static constexpr std::size_t kMaxKept = 4096;
    std::unordered_map<std::string, Kept> kept_;
    RealFs real_;
};

// A sysroot (ldsearch --root): every path the loader would use is resolved
// inside `root`, the way the kernel resolves it after chroot(2): symlinks are
// followed by hand (an absolute target starts again at the root, at most 40
// links), and ".." at the root stays there, so neither a link nor $ORIGIN/..
// can reach a file outside.  Relative paths start at `cwd`, a resolved
// path inside the root (as after `chroot DIR sh -c 'cd CWD && ...'`).
class RootFs final : public Fs {
public:
    // `root`: a directory, no trailing slash needed.
    explicit RootFs(std::string root, std::string cwd = "/");
    // Where a process started from the host directory `host_cwd` would be
    // inside `root`: its path there when it lies inside, else "/".
    static std::string cwd_inside(const std::string& root, const std::string& host_cwd);
    OpenResult open(const std::string& path) override;
    StatResult stat(const std::string& path) override;
    std::string cwd() override { return cwd_; }
    std::optional<std::string> realpath(const std::string& path) override;
    // The host path for a path inside the root, or the errno of resolving it.
    std::optional<std::string> host_path(const std::string& path, int* error) const;

private:
    // Resolves `path` to a root-relative path ("/a/b"), following symlinks.
    std::optional<std::string> resolve(const std::string& path, int* error) const;
    std::string root_;
    std::string cwd_;
    RealFs real_;
};

}  // namespace ldshim::host
