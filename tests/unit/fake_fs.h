// An in-memory filesystem for engine tests: files, directories and the cwd,
// with a log of every path the engine opened or stat'ed.
#pragma once

#include "loader/fs.h"

#include <cerrno>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace ldshim::testing {

class FakeFs final : public loader::Fs {
public:
    void file(const std::string& path, std::string bytes, std::uint32_t mode = 0100755) {
        files_[path] = {std::move(bytes), mode, next_ino_++};
        for (auto p = parent(path); !p.empty(); p = parent(p)) dirs_.insert(p);
    }
    void dir(const std::string& path) {
        dirs_.insert(path);
        for (auto p = parent(path); !p.empty(); p = parent(p)) dirs_.insert(p);
    }
    void set_cwd(std::string cwd) { cwd_ = std::move(cwd); }

    loader::OpenResult open(const std::string& path) override {
        opened.push_back(path);
        auto full = absolute(path);
        if (auto it = files_.find(full); it != files_.end())
            return {std::make_shared<loader::MemoryImage>(it->second.bytes, loader::FileId{1, it->second.ino},
                                                          it->second.mode),
                    0};
        if (dirs_.count(full))
            return {std::make_shared<loader::MemoryImage>(std::string(), loader::FileId{1, 1}, 040755, EISDIR), 0};
        return {nullptr, parent_is_file(full) ? ENOTDIR : ENOENT};
    }
    StatResult stat(const std::string& path) override {
        stated.push_back(path);
        if (path.empty()) return {ENOENT, false};
        auto full = absolute(path);
        if (dirs_.count(full)) return {0, true};
        if (files_.count(full)) return {0, false};
        return {parent_is_file(full) ? ENOTDIR : ENOENT, false};
    }
    std::string cwd() override { return cwd_; }
    std::optional<std::string> realpath(const std::string& path) override {
        auto full = absolute(path);
        if (files_.count(full) || dirs_.count(full)) return full;
        return std::nullopt;
    }

    std::vector<std::string> opened, stated;

private:
    struct Entry {
        std::string bytes;
        std::uint32_t mode;
        std::uint64_t ino;
    };
    static std::string parent(const std::string& p) {
        auto s = p.rfind('/');
        if (s == std::string::npos || s == 0) return s == 0 && p.size() > 1 ? "/" : "";
        return p.substr(0, s);
    }
    std::string absolute(const std::string& p) const {
        std::string full = (!p.empty() && p[0] == '/') ? p : cwd_ + "/" + p;
        // Collapse "//" and "/./" and resolve "..", like the kernel would.
        std::vector<std::string> parts;
        std::size_t i = 0;
        while (i <= full.size()) {
            auto j = full.find('/', i);
            if (j == std::string::npos) j = full.size();
            std::string c = full.substr(i, j - i);
            if (c == "..") {
                if (!parts.empty()) parts.pop_back();
            } else if (!c.empty() && c != ".") {
                parts.push_back(c);
            }
            i = j + 1;
        }
        std::string out;
        for (auto& c : parts) out += "/" + c;
        return out.empty() ? "/" : out;
    }
    bool parent_is_file(const std::string& full) const {
        for (auto p = parent(full); !p.empty() && p != "/"; p = parent(p))
            if (files_.count(p)) return true;
        return false;
    }

    std::map<std::string, Entry> files_;
    std::set<std::string> dirs_{"/"};
    std::string cwd_ = "/";
    std::uint64_t next_ino_ = 100;
};

}  // namespace ldshim::testing
