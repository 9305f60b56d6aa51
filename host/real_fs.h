// The Fs the search runs on outside tests: the kernel's filesystem, or a
// sysroot inside it.  The only code that makes system calls for the search.
#pragma once

#include "loader/fs.h"

#include <optional>
#include <string>

namespace ldshim::host {

using loader::Fs;
using loader::OpenResult;

// The real filesystem.  Files are opened non-blocking (a FIFO on a search
// path cannot hang the caller) and read with pread(2) on demand.
class RealFs final : public Fs {
public:
    OpenResult open(const std::string& path) override;
    StatResult stat(const std::string& path) override;
    std::string cwd() override;
    std::optional<std::string> realpath(const std::string& path) override;
};

// A sysroot (ldsearch --root): every path the loader would use is resolved
// inside `root`, the way the kernel resolves it after chroot(2): symlinks are
// followed by hand (an absolute target starts again at the root, at most 40
// links), and ".." at the root stays there, so neither a link nor $ORIGIN/..
// can reach a file outside.  Relative paths start at the root.
class RootFs final : public Fs {
public:
    explicit RootFs(std::string root);  // a directory; no trailing slash needed
    OpenResult open(const std::string& path) override;
    StatResult stat(const std::string& path) override;
    std::string cwd() override { return "/"; }
    std::optional<std::string> realpath(const std::string& path) override;
    // The host path for a path inside the root, or the errno of resolving it.
    std::optional<std::string> host_path(const std::string& path, int* error) const;

private:
    // Resolves `path` to a root-relative path ("/a/b"), following symlinks.
    std::optional<std::string> resolve(const std::string& path, int* error) const;
    std::string root_;
    RealFs real_;
};

}  // namespace ldshim::host
