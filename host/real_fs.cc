#include "host/real_fs.h"

#include "host/kept_image.h"
#include "loader/path_pool.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace ldshim::host {

using namespace ldshim::loader;  // NOLINT(google-build-using-namespace)

namespace {

class FdImage final : public FileImage {
public:
    FdImage(int fd, const struct stat& st) : fd_(fd), regular_(S_ISREG(st.st_mode)) {
        id_ = {static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
        mode_ = st.st_mode;
        size_ = regular_ ? static_cast<std::uint64_t>(st.st_size) : 0;
        if (S_ISDIR(st.st_mode)) {
            read_errno_ = EISDIR;
            return;
        }
        // Like the loader: read until an ELF header's worth arrived, EOF or error.
        head_buf_.resize(kHeadSize);
        std::size_t len = 0;
        while (len < 64) {
            ssize_t n = ::read(fd_, head_buf_.data() + len, head_buf_.size() - len);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) {
                if (n < 0) read_errno_ = errno;
                break;
            }
            len += static_cast<std::size_t>(n);
        }
        head_buf_.resize(len);
        head_ = head_buf_;
        if (!regular_) size_ = len;
    }
    ~FdImage() override {
        if (map_) ::munmap(map_, map_size_);
        if (fd_ >= 0) ::close(fd_);
    }
    FdImage(const FdImage&) = delete;
    FdImage& operator=(const FdImage&) = delete;

    int fd() const override { return regular_ ? fd_ : -1; }

    bool read_at(std::uint64_t off, std::size_t len, std::byte* out) const override {
        if (off > size_ || len > size_ - off) return false;
        if (off + len <= head_.size()) {  // already read with the header
            std::memcpy(out, head_.data() + off, len);
            return true;
        }
        if (all_read_) {  // read or mapped whole, the descriptor closed
            auto all = bytes();
            if (off > all.size() || len > all.size() - off) return false;
            std::memcpy(out, all.data() + off, len);
            return true;
        }
        return regular_ && pread_exactly(fd_, off, len, out);
    }

    std::span<const std::byte> bytes() const override {
        if (!regular_) return head_;
        if (!all_read_ && size_ >= kMapFrom) {
            // A large whole-file read (ld.so.cache) is mapped, as the loader
            // maps it: a lookup touches a few pages, where a read would zero
            // and copy every one.
            void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd_, 0);
            if (p != MAP_FAILED) {
                all_read_ = true;
                map_ = p;
                map_size_ = size_;
                close_fd();
                return {static_cast<const std::byte*>(p), map_size_};
            }
        }
        if (map_) return {static_cast<const std::byte*>(map_), map_size_};
        if (!all_read_) {
            all_read_ = true;
            all_.resize(size_);
            std::size_t got = 0;
            while (got < all_.size()) {
                ssize_t n = ::pread(fd_, all_.data() + got, all_.size() - got, static_cast<off_t>(got));
                if (n < 0 && errno == EINTR) continue;
                if (n <= 0) break;
                got += static_cast<std::size_t>(n);
            }
            all_.resize(got);  // a file that shrank under us reads as what is there
            close_fd();
        }
        return all_;
    }

private:
    // Once the whole file is in memory the descriptor goes: an image kept
    // for the process's life (the runtime's ld.so.cache) holds no fd the
    // host can see.
    void close_fd() const {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
    }

    mutable int fd_;
    bool regular_;
    std::vector<std::byte> head_buf_;
    static constexpr std::uint64_t kMapFrom = 16 * 1024;
    mutable bool all_read_ = false;
    mutable void* map_ = nullptr;
    mutable std::size_t map_size_ = 0;
    mutable std::vector<std::byte> all_;
};

FileVersion version_of(const struct stat& st) {
    FileVersion v;
    v.id = {static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
    v.size = static_cast<std::uint64_t>(st.st_size);
    v.mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
    v.ctime_ns = static_cast<std::int64_t>(st.st_ctim.tv_sec) * 1'000'000'000 + st.st_ctim.tv_nsec;
    v.mode = st.st_mode;
    return v;
}

}  // namespace

bool pread_exactly(int fd, std::uint64_t off, std::size_t len, std::byte* out) {
    std::size_t got = 0;
    while (got < len) {
        ssize_t n = ::pread(fd, out + got, len - got, static_cast<off_t>(off + got));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        got += static_cast<std::size_t>(n);
    }
    return true;
}

int read_whole_file(const std::string& path, std::string& out) {
    out.clear();
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno;
    // A regular file is read in one call of its size; anything else (a pipe,
    // a /proc file that reports no size) until end of file.
    struct stat st {};
    const std::size_t size =
        ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 ? static_cast<std::size_t>(st.st_size) : 0;
    int error = 0;
    for (;;) {
        const std::size_t at = out.size();
        const std::size_t room = size ? size - at : 16384;
        if (room == 0) break;
        out.resize(at + room);
        ssize_t n = ::read(fd, out.data() + at, room);
        out.resize(at + static_cast<std::size_t>(n > 0 ? n : 0));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) error = errno;
        if (n <= 0) break;
    }
    ::close(fd);
    return error;
}

bool write_all(int fd, std::string_view bytes) {
    while (!bytes.empty()) {
        ssize_t n = ::write(fd, bytes.data(), bytes.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}

bool replace_file(const std::string& path, std::string_view bytes) {
    std::string tmp = path + "." + std::to_string(::getpid()) + ".tmp";
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return false;
    const bool written = write_all(fd, bytes);
    bool ok = ::close(fd) == 0 && written && ::rename(tmp.c_str(), path.c_str()) == 0;
    if (!ok) ::unlink(tmp.c_str());
    return ok;
}

OpenResult RealFs::open_versioned(const std::string& path, FileVersion* version) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return {nullptr, errno};
    struct stat st {};
    if (fstat(fd, &st) != 0) {
        int err = errno;
        ::close(fd);
        return {nullptr, err};
    }
    if (version) *version = version_of(st);
    return {std::make_shared<FdImage>(fd, st), 0};
}

OpenResult RealFs::open(const std::string& path) { return open_versioned(path, nullptr); }

std::optional<FileVersion> RealFs::version(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return std::nullopt;
    return version_of(st);
}

namespace {

bool worth_keeping(const FileImage& img, const FileVersion& v) {
    static constexpr unsigned char kMagic[4] = {0x7f, 'E', 'L', 'F'};
    auto h = img.head();
    return S_ISREG(v.mode) && (v.mode & S_IROTH) && h.size() >= 4 && std::memcmp(h.data(), kMagic, 4) == 0;
}

}  // namespace

// The kept file while its version is unchanged.  A stat that fails with
// ENOENT or ENOTDIR is what open would say; any other outcome opens the
// file as RealFs does.
OpenResult RememberingFs::open(const std::string& path) {
    if (auto it = kept_.find(path); it != kept_.end()) {
        struct stat st {};
        if (::stat(path.c_str(), &st) == 0) {
            if (version_of(st) == it->second.version) return {it->second.image, 0};
        } else if (errno == ENOENT || errno == ENOTDIR) {
            int err = errno;
            kept_.erase(it);
            return {nullptr, err};
        }
        kept_.erase(it);
    }
    FileVersion v;
    OpenResult r = RealFs::open_versioned(path, &v);
    if (!r.image || !worth_keeping(*r.image, v)) return r;
    if (kept_.size() >= kMaxKept) kept_.clear();
    auto image = keep_image(path, *r.image);
    kept_[path] = {v, image};
    return {std::move(image), 0};
}

Fs::StatResult RealFs::stat(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return {errno, false};
    return {0, S_ISDIR(st.st_mode)};
}

std::string RealFs::cwd() {
    std::vector<char> buf(PATH_MAX);
    while (::getcwd(buf.data(), buf.size()) == nullptr) {
        if (errno != ERANGE || buf.size() > (1u << 20)) return {};
        buf.resize(buf.size() * 2);
    }
    return buf.data();
}

std::optional<std::string> RealFs::realpath(const std::string& path) {
    char* r = ::realpath(path.c_str(), nullptr);
    if (!r) return std::nullopt;
    std::string out(r);
    std::free(r);
    return out;
}

RootFs::RootFs(std::string root, std::string cwd) : root_(std::move(root)), cwd_(std::move(cwd)) {
    while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
    if (root_ == "/") root_.clear();
}

std::string RootFs::cwd_inside(const std::string& root, const std::string& host_cwd) {
    RealFs real;
    auto r = real.realpath(root), c = real.realpath(host_cwd);
    if (!r || !c) return "/";
    if (*r == "/") return *c;
    if (*c == *r) return "/";
    if (c->starts_with(*r + "/")) return c->substr(r->size());
    return "/";
}

std::optional<std::string> RootFs::resolve(const std::string& path, int* error) const {
    // The kernel's rule: an empty name is no file (glibc before 2.38 stats
    // "" for the root directory, and must see it fail).
    if (path.empty()) {
        if (error) *error = ENOENT;
        return std::nullopt;
    }
    constexpr int kMaxLinks = 40;   // the kernel's limit
    std::vector<std::string> done;  // resolved components
    std::vector<std::string> todo;  // components still to walk, in reverse order
    // "." (and an empty component: "a//b", "a/") stays as "." after a
    // component, since it asks that component to be a directory.
    auto push_reversed = [&](std::string_view p) {
        std::vector<std::string> parts;
        for (auto c : split_path(p, "/")) {
            if (c.empty() || c == ".") {
                if (!parts.empty() && parts.back() != ".") parts.emplace_back(".");
                continue;
            }
            parts.emplace_back(c);
        }
        todo.insert(todo.end(), parts.rbegin(), parts.rend());
    };
    push_reversed(path);
    if (path[0] != '/') push_reversed(cwd_);  // walked first
    int links = 0;
    while (!todo.empty()) {
        std::string c = std::move(todo.back());
        todo.pop_back();
        if (c == ".") continue;  // its directory was checked when walked
        if (c == "..") {
            if (!done.empty()) done.pop_back();  // at the root, ".." is the root
            continue;
        }
        std::string host = root_;
        for (const auto& d : done) host += "/" + d;
        host += "/" + c;
        struct stat st {};
        if (::lstat(host.c_str(), &st) != 0) {
            // A missing last component is the caller's business (ENOENT);
            // a missing directory on the way also ends here.
            if (error) *error = errno;
            if (errno == ENOENT && todo.empty()) {
                done.push_back(c);
                break;
            }
            return std::nullopt;
        }
        if (!S_ISLNK(st.st_mode)) {
            // The kernel's rule: anything after a file that is not a
            // directory ("file/..", "file/.", "file/") is ENOTDIR.
            if (!S_ISDIR(st.st_mode) && !todo.empty()) {
                if (error) *error = ENOTDIR;
                return std::nullopt;
            }
            done.push_back(std::move(c));
            continue;
        }
        if (++links > kMaxLinks) {
            if (error) *error = ELOOP;
            return std::nullopt;
        }
        std::vector<char> buf(static_cast<std::size_t>(st.st_size > 0 ? st.st_size : 255) + 1);
        ssize_t n = ::readlink(host.c_str(), buf.data(), buf.size());
        if (n < 0) {
            if (error) *error = errno;
            return std::nullopt;
        }
        std::string target(buf.data(), static_cast<std::size_t>(n));
        if (!target.empty() && target[0] == '/') done.clear();  // absolute: back to the root
        push_reversed(target);
    }
    if (error) *error = 0;
    std::string out;
    for (const auto& d : done) out += "/" + d;
    return out.empty() ? std::string("/") : out;
}

std::optional<std::string> RootFs::host_path(const std::string& path, int* error) const {
    int err = 0;
    auto r = resolve(path, &err);
    if (error) *error = err;
    if (!r) return std::nullopt;
    return root_ + (*r == "/" && !root_.empty() ? "" : *r);
}

OpenResult RootFs::open(const std::string& path) {
    int err = 0;
    auto host = host_path(path, &err);
    if (!host) return {nullptr, err};
    return real_.open(*host);
}

Fs::StatResult RootFs::stat(const std::string& path) {
    int err = 0;
    auto host = host_path(path, &err);
    if (!host) return {err, false};
    return real_.stat(*host);
}

std::optional<std::string> RootFs::realpath(const std::string& path) {
    int err = 0;
    auto r = resolve(path, &err);
    if (!r || err) return std::nullopt;
    if (real_.stat(root_ + *r).error != 0) return std::nullopt;
    return r;
}

}  // namespace ldshim::host
