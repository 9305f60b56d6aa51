// The hooks part of the C API.
#include "hooks/events.h"
#include "hooks/oplog.h"
#include "hooks/patcher.h"
#include "hooks/table.h"
#include "ldshim.h"

using namespace ldshim::hooks;

extern "C" {

ldshim_status ldshim_hooks_install(unsigned flags) {
    return static_cast<ldshim_status>(Patcher::instance().install(flags));
}
ldshim_status ldshim_hooks_uninstall(void) { return static_cast<ldshim_status>(Patcher::instance().uninstall()); }
ldshim_status ldshim_hooks_refresh(void) { return static_cast<ldshim_status>(Patcher::instance().refresh()); }
unsigned ldshim_hooks_active(void) { return g_active_paths.load(std::memory_order_relaxed); }

size_t ldshim_hooks_log_size(void) { return OpLog::global().size(); }

ldshim_status ldshim_hooks_log_get(size_t index, ldshim_hook_op_t* op) {
    const Op* e = op ? OpLog::global().get(index) : nullptr;
    if (!e) return LDSHIM_ERR_INVALID_ARGUMENT;
    op->object = e->object.c_str();
    op->symbol = e->symbol.c_str();
    op->version = e->version.c_str();
    op->slot = reinterpret_cast<const void*>(e->slot);
    op->old_value = reinterpret_cast<const void*>(e->old_value);
    op->new_value = reinterpret_cast<const void*>(e->new_value);
    op->target = reinterpret_cast<const void*>(e->target);
    op->status = static_cast<ldshim_hook_op_status_t>(e->status);
    op->detail = e->detail.c_str();
    return LDSHIM_OK;
}

ldshim_status ldshim_hooks_log_write(int fd) {
    try {
        return OpLog::global().write(fd) ? LDSHIM_OK : LDSHIM_ERR_SYSTEM;
    } catch (const std::bad_alloc&) {
        return LDSHIM_ERR_NO_MEMORY;
    }
}

const char* ldshim_hook_op_status_name(int status) { return op_status_name(status); }

ldshim_status ldshim_hooks_subscribe(ldshim_mem_callback_t callback, void* arg) {
    if (!callback) return LDSHIM_ERR_INVALID_ARGUMENT;
    return subscribe(callback, arg) ? LDSHIM_OK : LDSHIM_ERR_NO_MEMORY;
}

ldshim_status ldshim_hooks_unsubscribe(ldshim_mem_callback_t callback, void* arg) {
    if (!callback) return LDSHIM_ERR_INVALID_ARGUMENT;
    return unsubscribe(callback, arg) ? LDSHIM_OK : LDSHIM_ERR_INVALID_ARGUMENT;
}

}  // extern "C"
