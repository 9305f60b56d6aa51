#include "resolver/cache_follower.h"

#include "host/startup_env.h"

namespace ldshim::resolver {

void CacheFollower::start(std::string path) {
    path_ = std::move(path);
    read();
}

void CacheFollower::before_lookup() {
    if (read_in_call_) return;
    read();
    read_in_call_ = true;
}

// One stat tells whether the copy held is still the file.
void CacheFollower::read() {
    if (failed_) return;
    std::optional<host::FileVersion> now = host::RealFs::version(path_);
    if (now == version_) return;
    host::FileVersion v{};
    loader::OpenResult r = host::RealFs::open_versioned(path_, &v);
    cache_ = loader::LdCache::parse(r.image);
    version_.reset();
    if (r.image) version_ = v;
}

bool CacheFollower::unchanged_since_start() const {
    std::optional<std::int64_t> start = host::process_start_ns();
    constexpr std::int64_t kTickNs = 20'000'000;
    return version_ && start && version_->ctime_ns < *start - kTickNs;
}

bool CacheFollower::note_use(std::uint64_t lookups) {
    if (failed_ || lookups == 0 || cache_.usable()) return false;
    failed_ = true;
    cache_ = loader::LdCache();
    return true;
}

}  // namespace ldshim::resolver
