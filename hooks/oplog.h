// The operation log: one entry per slot write (and per restore), kept for
// the life of the process so that the strings handed out through the C API
// stay valid.  Bounded: past kMaxEntries, entries are counted, not kept.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>

namespace ldshim::hooks {

enum class OpStatus : int { patched = 0, chained = 1, restored = 2, left = 3, failed = 4 };
const char* op_status_name(int status);

struct Op {
    std::string object, symbol, version;
    std::uintptr_t slot = 0, old_value = 0, new_value = 0, target = 0;
    OpStatus status = OpStatus::patched;
    std::string detail;
};

class OpLog {
public:
    static constexpr std::size_t kMaxEntries = 1 << 20;
    static OpLog& global();

    void append(Op op);
    std::size_t size() const;
    std::size_t dropped() const;
    // A pointer to entry i (stable: a deque never moves its elements on
    // push_back), or nullptr.
    const Op* get(std::size_t i) const;
    // Tab-separated lines: status object symbol version slot old new target detail.
    bool write(int fd) const;
    // fork(): taken after the patcher's lock (the order of a pass).
    void fork_prepare() { mu_.lock(); }
    void fork_release() { mu_.unlock(); }

private:
    mutable std::mutex mu_;
    std::deque<Op> ops_;
    std::size_t dropped_ = 0;
};

}  // namespace ldshim::hooks
