// /etc/ld.so.cache as glibc reads it in a running process (dl-cache.c,
// dl-open.c): when a dlopen's search first consults it, as the file is
// then (ldconfig replaces it by a new file), kept to the end of that
// dlopen, and never again once a search found it missing or unusable.
// The model's engine reads cache() by reference; the live model calls the
// rest under its lock.
#pragma once

#include "host/real_fs.h"
#include "loader/ld_cache.h"

#include <cstdint>
#include <optional>
#include <string>

namespace ldshim::resolver {

class CacheFollower {
public:
    // Reads the file at `path` now.
    void start(std::string path);
    const loader::LdCache& cache() const { return cache_; }

    // A dlopen begins: its first lookup reads the file again if it changed.
    void begin_call() { read_in_call_ = false; }
    // The engine is about to consult the cache (Engine::set_before_cache_lookup).
    void before_lookup();
    // After a search that consulted the cache `lookups` times (0: none): true
    // when glibc has just given the cache up, for good.
    bool note_use(std::uint64_t lookups);
    // The file as read was there, unchanged, when the process started (to
    // the kernel's tick, with one tick to spare): what glibc read, if its
    // start-up needed it.
    bool unchanged_since_start() const;

private:
    void read();

    loader::LdCache cache_;
    std::string path_;
    std::optional<host::FileVersion> version_;  // of the file cache_ holds; nullopt: none
    // glibc's cache == (void *) -1: a search needed the cache and it could not
    // be read or was rejected; glibc never tries again.
    bool failed_ = false;
    bool read_in_call_ = false;  // this dlopen has read the file
};

}  // namespace ldshim::resolver
