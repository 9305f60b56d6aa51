// Images kept after their descriptor is closed (kept_image.h).
#include "host/kept_image.h"

#include "host/real_fs.h"
#include "loader/elf_facts.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

namespace ldshim::host {

using namespace ldshim::loader;  // NOLINT(google-build-using-namespace)

namespace {

struct Range {
    std::uint64_t off = 0;
    std::vector<std::byte> data;
};

bool copy_from(const std::vector<Range>& ranges, std::uint64_t off, std::size_t len, std::byte* out) {
    for (const auto& r : ranges)
        if (off >= r.off && off - r.off <= r.data.size() && len <= r.data.size() - (off - r.off)) {
            std::memcpy(out, r.data.data() + (off - r.off), len);
            return true;
        }
    return false;
}

// Lets read_facts read through a real image once and keeps every range it read.
class RecordingImage final : public FileImage {
public:
    explicit RecordingImage(const FileImage& real) : real_(real) {
        head_ = real.head();
        size_ = real.size();
        id_ = real.id();
        mode_ = real.mode();
        read_errno_ = real.read_errno();
    }
    std::span<const std::byte> bytes() const override { return real_.bytes(); }
    bool read_at(std::uint64_t off, std::size_t len, std::byte* out) const override {
        if (!real_.read_at(off, len, out)) return false;
        if (off + len > head_.size()) ranges.push_back({off, std::vector<std::byte>(out, out + len)});
        return true;
    }
    mutable std::vector<Range> ranges;

private:
    const FileImage& real_;
};

bool pread_path(const std::string& path, std::uint64_t off, std::size_t len, std::byte* out) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return false;
    bool ok = pread_exactly(fd, off, len, out);
    ::close(fd);
    return ok;
}

class KeptImage final : public FileImage {
public:
    KeptImage(std::string path, const FileImage& real) : path_(std::move(path)) {
        auto h = real.head();
        head_buf_.assign(h.begin(), h.end());
        head_ = head_buf_;
        size_ = real.size();
        id_ = real.id();
        mode_ = real.mode();
        read_errno_ = real.read_errno();
        if (S_ISREG(real.mode())) {  // its ranges are readable (read_at)
            RecordingImage rec(real);
            (void)read_facts(rec);
            kept_ = std::move(rec.ranges);
        }
    }

    std::span<const std::byte> bytes() const override {
        std::lock_guard lock(mu_);
        if (!all_) {
            auto r = RealFs().open(path_);
            auto b = r.image ? r.image->bytes() : head_;
            all_.emplace(b.begin(), b.end());
        }
        return *all_;
    }

    bool read_at(std::uint64_t off, std::size_t len, std::byte* out) const override {
        if (off > size_ || len > size_ - off) return false;
        if (off + len <= head_.size()) {
            std::memcpy(out, head_.data() + off, len);
            return true;
        }
        if (copy_from(kept_, off, len, out)) return true;
        std::lock_guard lock(mu_);
        if (copy_from(later_, off, len, out)) return true;
        if (!pread_path(path_, off, len, out)) return false;
        later_.push_back({off, std::vector<std::byte>(out, out + len)});
        return true;
    }

private:
    std::string path_;
    std::vector<std::byte> head_buf_;
    std::vector<Range> kept_;  // immutable after construction
    mutable std::mutex mu_;
    mutable std::vector<Range> later_;
    mutable std::optional<std::vector<std::byte>> all_;
};

}  // namespace

std::shared_ptr<const FileImage> keep_image(std::string path, const FileImage& real) {
    return std::make_shared<KeptImage>(std::move(path), real);
}

}  // namespace ldshim::host
