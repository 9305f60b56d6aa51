// /etc/ld.so.cache: the new format (glibc-ld.so.cache1.1, with its extension
// directory and glibc-hwcaps names), the old ld.so-1.7.0 format and the
// compat format (old with new embedded), looked up as glibc 2.36 does.
#pragma once

#include "loader/fs.h"
#include "loader/loader_config.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ldshim::loader {

// glibc's _dl_cache_libcmp: digit runs compare numerically, so
// libfoo.so.10 > libfoo.so.9.
int libcmp(const char* a, const char* b);

inline constexpr std::int32_t kCacheFlagsX8664Libc6 = 0x0303;
inline constexpr std::int32_t kCacheFlagsAarch64Libc6 = 0x0a03;  // FLAG_ELF_LIBC6 | FLAG_AARCH64_LIB64

struct CacheEntry {
    std::int32_t flags = 0;
    std::string key;
    std::string value;
    std::uint64_t hwcap = 0;
    std::optional<std::string> hwcaps_name;  // for glibc-hwcaps entries
};

class LdCache {
public:
    // Parse a whole cache file.  A file the loader would reject yields an
    // empty cache (`usable()` false), never an error: the loader then simply
    // has no cache hits.
    static LdCache parse(std::shared_ptr<const FileImage> image);
    static LdCache load(Fs& fs, const std::string& path);

    bool usable() const { return usable_; }
    std::string_view format() const { return format_; }
    std::size_t size() const { return nlibs_; }
    std::vector<CacheEntry> entries() const;

    // The path the loader would try for NAME, or nullopt.
    std::optional<std::string> lookup(const char* name, const LoaderConfig& cfg) const;

private:
    const char* str(std::uint32_t off) const;
    const std::byte* entry(std::uint32_t i) const;

    std::shared_ptr<const FileImage> image_;
    bool usable_ = false;
    const char* format_ = "none";
    const std::byte* entries_ = nullptr;
    std::uint32_t nlibs_ = 0;
    std::uint32_t entry_size_ = 0;   // 12 (old) or 24 (new)
    const char* strings_ = nullptr;  // base that string offsets are relative to
    std::uint64_t strings_size_ = 0;
    std::vector<std::string> hwcaps_names_;  // extension tag 1
};

}  // namespace ldshim::loader
