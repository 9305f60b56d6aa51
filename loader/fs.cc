#include "loader/fs.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <vector>

namespace ldshim::loader {
namespace {

class MappedImage final : public FileImage {
public:
    MappedImage(void* addr, std::size_t len, const struct stat& st, int read_errno)
        : addr_(addr), len_(len) {
        bytes_ = {static_cast<const std::byte*>(addr), addr ? len : 0};
        id_ = {static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
        mode_ = st.st_mode;
        read_errno_ = read_errno;
    }
    ~MappedImage() override {
        if (addr_) munmap(addr_, len_);
    }
    MappedImage(const MappedImage&) = delete;
    MappedImage& operator=(const MappedImage&) = delete;

private:
    void* addr_;
    std::size_t len_;
};

class BufferImage final : public FileImage {
public:
    BufferImage(std::vector<std::byte> data, const struct stat& st, int read_errno)
        : data_(std::move(data)) {
        bytes_ = data_;
        id_ = {static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
        mode_ = st.st_mode;
        read_errno_ = read_errno;
    }

private:
    std::vector<std::byte> data_;
};

// Closes the descriptor on every path out of open().
struct Fd {
    int fd;
    ~Fd() {
        if (fd >= 0) ::close(fd);
    }
};

}  // namespace

OpenResult RealFs::open(const std::string& path) {
    Fd fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
    if (fd.fd < 0) return {nullptr, errno};
    struct stat st {};
    if (fstat(fd.fd, &st) != 0) return {nullptr, errno};

    if (S_ISDIR(st.st_mode)) return {std::make_shared<BufferImage>(std::vector<std::byte>{}, st, EISDIR), 0};

    if (S_ISREG(st.st_mode)) {
        auto len = static_cast<std::size_t>(st.st_size);
        if (len == 0) return {std::make_shared<BufferImage>(std::vector<std::byte>{}, st, 0), 0};
        void* addr = mmap(nullptr, len, PROT_READ, MAP_PRIVATE, fd.fd, 0);
        if (addr == MAP_FAILED) return {std::make_shared<BufferImage>(std::vector<std::byte>{}, st, errno), 0};
        return {std::make_shared<MappedImage>(addr, len, st, 0), 0};
    }

    // A device or FIFO: what a single bounded read yields, like the loader's read.
    std::vector<std::byte> buf(4096);
    ssize_t n = ::read(fd.fd, buf.data(), buf.size());
    int err = n < 0 ? errno : 0;
    buf.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
    return {std::make_shared<BufferImage>(std::move(buf), st, err), 0};
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

}  // namespace ldshim::loader
