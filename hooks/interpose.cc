// Handing out a CUDA hook for a function fetched by name: what the dlsym and
// dlvsym front entries ask (resolver/front_entries.cc), so function pointers
// fetched by name are hooked too, and the proc-address mapper, which does the
// same for cuGetProcAddress.
#include "hooks/as_caller.h"
#include "hooks/events.h"
#include "hooks/patcher.h"
#include "hooks/table.h"
#include "ldshim.h"

#include <dlfcn.h>
#include <link.h>

#include <cstring>

using namespace ldshim::hooks;

namespace {

// Returns the hook for a CUDA function found by name when the hook calls
// exactly that function, publishing it as what the hook calls when nothing
// else was known; else the function itself.
void* hooked(void* found, int id, const char* version) {
    if (!found || id < 0 || !g_recording.load(std::memory_order_acquire)) return found;
    const HookDef& def = hook_def(id);
    // Loader functions are returned as they are: a dlopen wrapper that looks
    // up "dlopen" by name must get glibc's, or it would call ldshim's hook
    // from its own code and be taken for the caller.
    if (def.kind == HookKind::loader) return found;
    if (def.version && version && std::strcmp(def.version, version) != 0) return found;
    if (reinterpret_cast<void*>(def.fn) == found) return found;
    // The hook calls one function for every caller, so it stands in only
    // for that one.  Not for another definition (another library's, another
    // namespace's): it would call the wrong one.  Not while another tool's
    // hook is chained in front of the definition: that tool looks up what it
    // wraps by name (UCX's ucm does, at its first call), and the hook would
    // lead it back into itself.
    void* current = nullptr;
    if (publish_next(id, found, &current))
        adopt_companions(found, def.kind);
    else if (current != found)
        return found;
    g_active_paths.fetch_or(def.kind == HookKind::proc ? LDSHIM_PATH_PROC_ADDRESS : 0, std::memory_order_relaxed);
    g_handed_out[id].store(true, std::memory_order_release);
    return def.fn;
}

}  // namespace

namespace ldshim::hooks {

// dlsym and dlvsym: glibc answers every lookup for the caller itself, since
// the scope (RTLD_DEFAULT's, RTLD_NEXT's), dlerror()'s text and an auditor's
// binder all follow from its return address.  Only a hooked CUDA name is
// asked from a return point in the caller's object (hooks/as_caller.h), to
// hand out the hook for what glibc found.  Everything else goes on by a jump:
// any other name; RTLD_NEXT, which a wrapper of the CUDA function itself uses
// to find what it wraps; and a caller with no return point.
void* sym_decide(HookId which, const void* caller, void* handle, const char* name, const char* version, void** result) {
    void* real = g_next[static_cast<int>(which)].load(std::memory_order_acquire);
    if (!name || handle == RTLD_NEXT || !g_recording.load(std::memory_order_acquire)) return real;
    const int id = find_hook(name);
    if (id < 0 || hook_def(id).kind == HookKind::loader) return real;  // find_hook knows only hooks built
    const auto rp = return_point_in(caller);
    if (!rp) return real;
    *result = hooked(call_from(*rp, real, handle, name, version), id, version);
    return nullptr;
}

void* hook_proc_address(void* fn) {
    if (!fn) return fn;
    auto addr = reinterpret_cast<std::uintptr_t>(fn);
    if (hook_at(addr) >= 0) return fn;
    int id = -1;
    Dl_info info;
    if (dladdr(fn, &info) && info.dli_sname && info.dli_saddr == fn) id = find_hook(info.dli_sname);
    if (id < 0)  // not exported under its own name: known only if a slot held it
        for (int i = 0; i < kHookCount && id < 0; ++i)
            if (hook_def(i).kind != HookKind::loader && g_next[i].load() == fn) id = i;
    if (id < 0 || hook_def(id).kind == HookKind::loader) return fn;
    return hooked(fn, id, nullptr);
}

}  // namespace ldshim::hooks
