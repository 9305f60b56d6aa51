#include "hooks/oplog.h"

#include "host/real_fs.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

namespace ldshim::hooks {

const char* op_status_name(int status) {
    switch (status) {
        case static_cast<int>(OpStatus::patched): return "patched";
        case static_cast<int>(OpStatus::chained): return "chained";
        case static_cast<int>(OpStatus::restored): return "restored";
        case static_cast<int>(OpStatus::left): return "left";
        case static_cast<int>(OpStatus::failed): return "failed";
        default: return "unknown";
    }
}

OpLog& OpLog::global() {
    static OpLog* log = new OpLog;  // never destroyed: hooks may log during exit
    return *log;
}

void OpLog::append(Op op) {
    std::lock_guard lock(mu_);
    if (ops_.size() >= kMaxEntries) {
        ++dropped_;
        return;
    }
    ops_.push_back(std::move(op));
}

std::size_t OpLog::size() const {
    std::lock_guard lock(mu_);
    return ops_.size();
}

std::size_t OpLog::dropped() const {
    std::lock_guard lock(mu_);
    return dropped_;
}

const Op* OpLog::get(std::size_t i) const {
    std::lock_guard lock(mu_);
    return i < ops_.size() ? &ops_[i] : nullptr;
}

bool OpLog::write(int fd) const {
    if (fcntl(fd, F_GETFL) < 0) return false;  // a bad descriptor fails even with nothing to write
    std::string out;
    {
        std::lock_guard lock(mu_);
        for (const Op& op : ops_) {
            char nums[160];
            std::snprintf(nums, sizeof nums, "\t%#lx\t%#lx\t%#lx\t%#lx\t", static_cast<unsigned long>(op.slot),
                          static_cast<unsigned long>(op.old_value), static_cast<unsigned long>(op.new_value),
                          static_cast<unsigned long>(op.target));
            out += op_status_name(static_cast<int>(op.status));
            out += '\t';
            out += op.object.empty() ? "<main program>" : op.object;
            out += '\t';
            out += op.symbol;
            out += '\t';
            out += op.version.empty() ? "-" : op.version;
            out += nums;
            out += op.detail.empty() ? "-" : op.detail;
            out += '\n';
        }
        if (dropped_) out += "# " + std::to_string(dropped_) + " more entries dropped (log full)\n";
    }
    return host::write_all(fd, out);
}

}  // namespace ldshim::hooks
