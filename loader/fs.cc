#include "loader/fs.h"

#include <algorithm>
#include <cstring>

namespace ldshim::loader {

MemoryImage::MemoryImage(std::string data, FileId id, std::uint32_t mode, int read_errno) : data_(std::move(data)) {
    auto all = bytes();
    head_ = all.first(std::min(all.size(), kHeadSize));
    size_ = data_.size();
    id_ = id;
    mode_ = mode;
    read_errno_ = read_errno;
}

bool FileImage::read_at(std::uint64_t off, std::size_t len, std::byte* out) const {
    auto all = bytes();
    if (off > all.size() || len > all.size() - off) return false;
    std::memcpy(out, all.data() + off, len);
    return true;
}

std::span<const std::byte> MemoryImage::bytes() const {
    return {reinterpret_cast<const std::byte*>(data_.data()), data_.size()};
}

}  // namespace ldshim::loader
