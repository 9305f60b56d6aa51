#include "loader/ld_cache.h"

#include <cstring>

namespace ldshim::loader {
namespace {

constexpr char kMagicOld[] = "ld.so-1.7.0";
constexpr char kMagicNew[] = "glibc-ld.so.cache1.1";
constexpr std::size_t kOldHeader = 16;  // magic[11] + pad + u32 nlibs
constexpr std::size_t kNewHeader = 48;
constexpr std::uint32_t kExtensionMagic = 0xEAA42174;
constexpr std::uint64_t kHwcapExtension = 1ULL << 62;
constexpr std::uint32_t kIsaLevelMask = (1u << 10) - 1;
constexpr std::uint64_t kHwcapTls = 1ULL << 63;
constexpr int kFirstPlatformBit = 48;
constexpr std::uint64_t kPlatformMask = 0xFULL << kFirstPlatformBit;

template <typename T>
T rd(const std::byte* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

bool isdigit_c(char c) { return c >= '0' && c <= '9'; }

// Bit of an x86 platform string in cache hwcap values (haswell = 50 ...).
int x86_platform_index(std::string_view p) {
    static constexpr std::string_view names[] = {"i586", "i686", "haswell", "xeon_phi"};
    for (int i = 0; i < 4; ++i)
        if (names[i] == p) return i;
    return -1;
}

// What a loader of `machine` takes from the cache: the entry flags it was
// built with (ldconfig writes every machine's libraries into one file) and
// which hwcap bits name a platform (x86 only; aarch64 has none).
struct CacheAbi {
    std::int32_t flags;
    std::uint64_t platform_mask;
};
CacheAbi cache_abi(std::uint16_t machine) {
    if (machine == machine::kAarch64) return {kCacheFlagsAarch64Libc6, 0};
    return {kCacheFlagsX8664Libc6, kPlatformMask};
}

}  // namespace

int libcmp(const char* p1, const char* p2) {
    while (*p1 != '\0') {
        if (isdigit_c(*p1) && isdigit_c(*p2)) {
            // Numeric runs compare by value (leading zeros ignored by the arithmetic).
            unsigned long long v1 = 0, v2 = 0;
            while (isdigit_c(*p1)) v1 = v1 * 10 + static_cast<unsigned>(*p1++ - '0');
            while (isdigit_c(*p2)) v2 = v2 * 10 + static_cast<unsigned>(*p2++ - '0');
            if (v1 != v2) return v1 < v2 ? -1 : 1;
        } else if (isdigit_c(*p1)) {
            return 1;
        } else if (isdigit_c(*p2)) {
            return -1;
        } else if (*p1 != *p2) {
            return static_cast<signed char>(*p1) - static_cast<signed char>(*p2);
        } else {
            ++p1;
            ++p2;
        }
    }
    return 0 - static_cast<signed char>(*p2);
}

LdCache LdCache::load(Fs& fs, const std::string& path) {
    auto r = fs.open(path);
    if (!r.image) return {};
    return parse(std::move(r.image));
}

LdCache LdCache::parse(std::shared_ptr<const FileImage> image) {
    LdCache c;
    if (!image) return c;
    auto b = image->bytes();
    const std::byte* base = b.data();
    std::size_t size = b.size();
    c.image_ = std::move(image);

    auto new_at = [&](std::size_t off) -> bool {
        // A new-format header at `off`; string offsets are relative to it.
        if (size < off || size - off <= kNewHeader) return false;
        if (std::memcmp(base + off, kMagicNew, sizeof kMagicNew - 1) != 0) return false;
        std::uint32_t nlibs = rd<std::uint32_t>(base + off + 20);
        if ((size - off - kNewHeader) / 24 < nlibs) return false;
        std::uint8_t endian = rd<std::uint8_t>(base + off + 28) & 3;
        if (endian != 0 && endian != 2) return false;  // this host is little-endian
        c.entries_ = base + off + kNewHeader;
        c.nlibs_ = nlibs;
        c.entry_size_ = 24;
        c.strings_ = reinterpret_cast<const char*>(base + off);
        // glibc bounds string offsets by the whole mapping size.
        c.strings_size_ = size;
        // Extension directory: offsets in it are file offsets.
        std::uint32_t ext = rd<std::uint32_t>(base + off + 32);
        if (ext != 0 && ext % 4 == 0 && ext <= size && size - ext >= 8 &&
            rd<std::uint32_t>(base + ext) == kExtensionMagic) {
            std::uint32_t count = rd<std::uint32_t>(base + ext + 4);
            if ((size - ext - 8) / 16 >= count) {
                for (std::uint32_t i = 0; i < count; ++i) {
                    const std::byte* s = base + ext + 8 + 16 * i;
                    std::uint32_t tag = rd<std::uint32_t>(s), eoff = rd<std::uint32_t>(s + 8),
                                  esz = rd<std::uint32_t>(s + 12);
                    if (tag != 1 || eoff % 4 || esz % 4 || esz == 0 || eoff > size || esz > size - eoff) continue;
                    for (std::uint32_t k = 0; k < esz / 4; ++k) {
                        std::uint32_t so = rd<std::uint32_t>(base + eoff + 4 * k);
                        const char* p = c.str(so);
                        c.hwcaps_names_.emplace_back(p ? p : "");
                    }
                }
            }
        }
        return true;
    };

    if (new_at(0)) {
        c.usable_ = true;
        c.format_ = "new";
        return c;
    }
    if (size > kOldHeader && std::memcmp(base, kMagicOld, sizeof kMagicOld - 1) == 0) {
        std::uint32_t nlibs = rd<std::uint32_t>(base + 12);
        if ((size - kOldHeader) / 12 < nlibs) return c;
        std::size_t off = (kOldHeader + std::size_t{nlibs} * 12 + 7) & ~std::size_t{7};
        if (new_at(off)) {
            c.usable_ = true;
            c.format_ = "compat";
            return c;
        }
        c.entries_ = base + kOldHeader;
        c.nlibs_ = nlibs;
        c.entry_size_ = 12;
        c.strings_ = reinterpret_cast<const char*>(base + kOldHeader + std::size_t{nlibs} * 12);
        c.strings_size_ = size - kOldHeader - std::size_t{nlibs} * 12;
        c.usable_ = true;
        c.format_ = "old";
    }
    return c;
}

const char* LdCache::str(std::uint32_t off) const {
    if (off >= strings_size_) return nullptr;
    const char* end = reinterpret_cast<const char*>(image_->bytes().data()) + image_->bytes().size();
    const char* p = strings_ + off;
    if (p >= end || !std::memchr(p, '\0', static_cast<std::size_t>(end - p))) return nullptr;
    return p;
}

const std::byte* LdCache::entry(std::uint32_t i) const { return entries_ + std::size_t{i} * entry_size_; }

std::vector<CacheEntry> LdCache::entries() const {
    std::vector<CacheEntry> out;
    for (std::uint32_t i = 0; i < nlibs_; ++i) {
        const std::byte* e = entry(i);
        CacheEntry ce;
        ce.flags = rd<std::int32_t>(e);
        const char* k = str(rd<std::uint32_t>(e + 4));
        const char* v = str(rd<std::uint32_t>(e + 8));
        ce.key = k ? k : "";
        ce.value = v ? v : "";
        if (entry_size_ == 24) {
            ce.hwcap = rd<std::uint64_t>(e + 16);
            bool named = ((ce.hwcap >> 32) & ~std::uint64_t{kIsaLevelMask}) == (kHwcapExtension >> 32);
            std::uint32_t idx = static_cast<std::uint32_t>(ce.hwcap);
            if (named && idx < hwcaps_names_.size()) ce.hwcaps_name = hwcaps_names_[idx];
        }
        out.push_back(std::move(ce));
    }
    return out;
}

std::optional<std::string> LdCache::lookup(const char* name, const LoaderConfig& cfg) const {
    if (!usable_ || nlibs_ == 0) return std::nullopt;
    const CacheAbi abi = cache_abi(cfg.machine);
    std::uint64_t platform = ~std::uint64_t{0};
    if (cfg.platform && abi.platform_mask != 0) {
        int idx = x86_platform_index(*cfg.platform);
        if (idx >= 0) platform = std::uint64_t{1} << (kFirstPlatformBit + idx);
    }
    const std::uint64_t exclude = ~(cfg.hwcap_searched | abi.platform_mask | kHwcapTls);
    // Priority of a glibc-hwcaps entry: 1 for the best active name; 0 = unusable.
    auto priority = [&](std::uint64_t hwcap) -> std::uint32_t {
        std::uint32_t idx = static_cast<std::uint32_t>(hwcap);
        if (idx >= hwcaps_names_.size()) return 0;
        for (std::size_t i = 0; i < cfg.hwcaps_active.size(); ++i)
            if (cfg.hwcaps_active[i] == hwcaps_names_[idx]) return static_cast<std::uint32_t>(i + 1);
        return 0;
    };
    auto key_at = [&](std::uint32_t i) { return str(rd<std::uint32_t>(entry(i) + 4)); };

    std::int64_t left = 0, right = std::int64_t{nlibs_} - 1;
    while (left <= right) {
        std::int64_t middle = (left + right) / 2;
        const char* key = key_at(static_cast<std::uint32_t>(middle));
        if (!key) return std::nullopt;  // bogus string table: the loader gives up
        int cmp = libcmp(name, key);
        if (cmp == 0) {
            left = middle;
            while (middle > 0) {
                const char* k = key_at(static_cast<std::uint32_t>(middle - 1));
                if (!k || libcmp(name, k) != 0) break;
                --middle;
            }
            const char* best = nullptr;
            std::uint32_t best_priority = 0;
            do {
                const std::byte* e = entry(static_cast<std::uint32_t>(middle));
                if (middle > left) {
                    const char* k = key_at(static_cast<std::uint32_t>(middle));
                    if (!k || libcmp(name, k) != 0) break;
                }
                std::int32_t flags = rd<std::int32_t>(e);
                const char* value = str(rd<std::uint32_t>(e + 8));
                if (flags != abi.flags || !value) continue;
                bool named = false;
                if (entry_size_ == 24) {
                    std::uint64_t hwcap = rd<std::uint64_t>(e + 16);
                    named = ((hwcap >> 32) & ~std::uint64_t{kIsaLevelMask}) == (kHwcapExtension >> 32);
                    if (named) {
                        std::uint32_t level = static_cast<std::uint32_t>(hwcap >> 32) & kIsaLevelMask;
                        if ((level & ~cfg.isa_levels) != 0) continue;
                    }
                    // Named entries sort first; the first plain one ends the search.
                    if (!named && best) break;
                    if (!named && (hwcap & exclude)) continue;
                    if ((hwcap & abi.platform_mask) != 0 && (hwcap & abi.platform_mask) != platform && !named) continue;
                    if (named) {
                        std::uint32_t p = priority(hwcap);
                        if (p == 0) continue;
                        if (best && p >= best_priority) continue;
                        best_priority = p;
                    }
                }
                best = value;
                if (!named) break;  // flags already equal the default id
            } while (++middle <= right);
            if (best) return std::string(best);
            return std::nullopt;
        }
        if (cmp < 0)
            left = middle + 1;
        else
            right = middle - 1;
    }
    return std::nullopt;
}

}  // namespace ldshim::loader
