// The shared, remembering filesystem of `ldsearch check` (check_fs.h).
#include "check_fs.h"

#include "host/kept_image.h"
#include "host/real_fs.h"

#include <utility>

using namespace ldshim::loader;

namespace ldsearch {

std::string SharedFs::host(const std::string& path) const {
    if (!root_) return path;
    auto h = root_->host_path(path, nullptr);
    return h ? *h : std::string();
}

OpenResult SharedFs::open(const std::string& path) {
    {
        std::lock_guard lock(mu_);
        if (auto it = opened_.find(path); it != opened_.end()) return it->second;
    }
    // Outside the lock: two workers may open the same file at once; the
    // first answer stored wins, so every engine sees one FileImage per path.
    OpenResult r = root_ ? root_->open(path) : ldshim::host::RealFs().open(path);
    // A range not kept is read again by the host path.
    if (r.image) r.image = ldshim::host::keep_image(host(path), *r.image);
    std::lock_guard lock(mu_);
    return opened_.emplace(path, std::move(r)).first->second;
}

Fs::StatResult SharedFs::stat(const std::string& path) {
    {
        std::lock_guard lock(mu_);
        if (auto it = stats_.find(path); it != stats_.end()) return it->second;
    }
    StatResult r = root_ ? root_->stat(path) : ldshim::host::RealFs().stat(path);
    std::lock_guard lock(mu_);
    return stats_.emplace(path, r).first->second;
}

std::string SharedFs::cwd() {
    std::lock_guard lock(mu_);
    if (!cwd_) cwd_ = root_ ? root_->cwd() : ldshim::host::RealFs().cwd();
    return *cwd_;
}

std::optional<std::string> SharedFs::realpath(const std::string& path) {
    {
        std::lock_guard lock(mu_);
        if (auto it = real_.find(path); it != real_.end()) return it->second;
    }
    auto r = root_ ? root_->realpath(path) : ldshim::host::RealFs().realpath(path);
    std::lock_guard lock(mu_);
    return real_.emplace(path, std::move(r)).first->second;
}

}  // namespace ldsearch
