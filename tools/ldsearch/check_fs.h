// The filesystem that `ldsearch check` shares between its workers: the real
// one, with every answer kept.  Thousands of files resolve the same few
// hundred libraries through the same directories; each file is opened and
// its ELF header and dynamic section read once, each directory and missing
// candidate asked once, whatever the number of engines asking.
#pragma once

#include "host/real_fs.h"
#include "loader/fs.h"

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace ldsearch {

// Thread-safe.  A file's image is kept without its descriptor
// (host/kept_image.h).  Files are assumed not to change during a run.
// Under --root, every path is one inside the root (host/real_fs.h's RootFs).
class SharedFs final : public ldshim::loader::Fs {
public:
    SharedFs() = default;
    explicit SharedFs(std::unique_ptr<ldshim::host::RootFs> root) : root_(std::move(root)) {}
    // The host path of a path inside the root (itself without a root).
    std::string host(const std::string& path) const;
    ldshim::loader::OpenResult open(const std::string& path) override;
    StatResult stat(const std::string& path) override;
    std::string cwd() override;
    std::optional<std::string> realpath(const std::string& path) override;

private:
    std::unique_ptr<ldshim::host::RootFs> root_;  // null: the real filesystem
    std::mutex mu_;
    std::unordered_map<std::string, ldshim::loader::OpenResult> opened_;
    std::unordered_map<std::string, StatResult> stats_;
    std::unordered_map<std::string, std::optional<std::string>> real_;
    std::optional<std::string> cwd_;
};

}  // namespace ldsearch
