// The hooks on the loader's entry points.  dlopen and dlclose let the patcher
// see new and vanished objects at once (and dlopen resolves from the true
// caller, which is ldshim's whole point); dlsym and dlvsym hand out the hook
// for a hooked CUDA name, so function pointers fetched by name are hooked
// too; the proc-address mapper does the same for cuGetProcAddress.
#include "hooks/as_caller.h"
#include "hooks/dlopen_entry.h"
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

}  // namespace

extern "C" {

// The front entries: reached through the caller's own import slot, so the
// return address is in the true caller; the slot's previous value is next.
// (ldshim_dlopen_decide refreshes the hooks after a load.)  dlopen's is the
// recipe of hooks/dlopen_entry.h around this; elsewhere, a call.
[[gnu::visibility("hidden")]] ldshim_dlopen_fn ldshim_hook_dlopen_decide(const void* caller, const char* file, int mode,
                                                                         void** handle) {
    auto real = reinterpret_cast<ldshim_dlopen_fn>(loader_next(HookId::k_dlopen, caller));
    return ldshim_dlopen_decide(real, caller, file, mode, handle);
}

#if !LDSHIM_HAVE_DLOPEN_ENTRY
[[gnu::visibility("hidden")]] void* ldshim_hook_dlopen(const char* file, int mode) {
    void* handle = nullptr;
    ldshim_dlopen_fn go_on = ldshim_hook_dlopen_decide(__builtin_return_address(0), file, mode, &handle);
    return go_on ? go_on(file, mode) : handle;
}
#endif

[[gnu::visibility("hidden")]] ldshim_dlmopen_fn ldshim_hook_dlmopen_decide(const void* caller, long lmid,
                                                                           const char* file, int mode, void** handle) {
    auto real = reinterpret_cast<ldshim_dlmopen_fn>(loader_next(HookId::k_dlmopen, caller));
    return ldshim_dlmopen_decide(real, lmid, caller, file, mode, handle);
}

#if !LDSHIM_HAVE_DLOPEN_ENTRY
[[gnu::visibility("hidden")]] void* ldshim_hook_dlmopen(long lmid, const char* file, int mode) {
    void* handle = nullptr;
    ldshim_dlmopen_fn go_on = ldshim_hook_dlmopen_decide(__builtin_return_address(0), lmid, file, mode, &handle);
    return go_on ? go_on(lmid, file, mode) : handle;
}
#endif

[[gnu::visibility("hidden")]] int ldshim_hook_dlclose(void* handle) {
    auto real = next<int (*)(void*)>(HookId::k_dlclose);
    int r = real(handle);
    if (r == 0) Patcher::instance().refresh();  // on failure, keep dlerror()'s text intact
    return r;
}

// dlsym's and dlvsym's, behind LDSHIM_ENTRY3 (dlsym's third word is not an
// argument: it is passed on as it came, and not read).
[[gnu::visibility("hidden")]] void* ldshim_hook_dlsym_decide(const void* caller, void* handle, const char* name,
                                                             const char*, void** result) {
    return sym_decide(HookId::k_dlsym, caller, handle, name, nullptr, result);
}

[[gnu::visibility("hidden")]] void* ldshim_hook_dlvsym_decide(const void* caller, void* handle, const char* name,
                                                              const char* version, void** result) {
    return sym_decide(HookId::k_dlvsym, caller, handle, name, version, result);
}

}  // extern "C"

namespace ldshim::hooks {

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

#if LDSHIM_HAVE_DLOPEN_ENTRY
LDSHIM_DLOPEN_ENTRY(ldshim_hook_dlopen, ldshim_hook_dlopen_decide, 1);
LDSHIM_ENTRY3(ldshim_hook_dlmopen, ldshim_hook_dlmopen_decide, 1);
LDSHIM_ENTRY3(ldshim_hook_dlsym, ldshim_hook_dlsym_decide, 1);
LDSHIM_ENTRY3(ldshim_hook_dlvsym, ldshim_hook_dlvsym_decide, 1);
#endif
