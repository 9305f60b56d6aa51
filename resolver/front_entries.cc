// The front entries: ldshim's functions written into the loader's import
// slots (hooks/patcher.h writes them; hooks/table.h lists them).  Reached
// through the caller's own slot, so the return address is in the true
// caller, and the slot's previous value is what the call goes on to.
// dlopen and dlmopen are resolved from that caller by the one dlopen core
// (c_api.cc), which refreshes the hooks after a load; dlclose refreshes them
// after an unload; dlsym and dlvsym let the hooks hand out a CUDA hook for a
// hooked name (hooks/events.h: sym_decide).  Each is the recipe of
// resolver/dlopen_entry.h around its C half.
#include "hooks/events.h"
#include "hooks/patcher.h"
#include "hooks/table.h"
#include "ldshim.h"
#include "resolver/dlopen_entry.h"

using namespace ldshim::hooks;

extern "C" {

[[gnu::visibility("hidden")]] ldshim_dlopen_fn ldshim_hook_dlopen_decide(const void* caller, const char* file, int mode,
                                                                         void** handle) {
    auto real = reinterpret_cast<ldshim_dlopen_fn>(loader_next(HookId::k_dlopen, caller));
    return ldshim_dlopen_decide(real, caller, file, mode, handle);
}

[[gnu::visibility("hidden")]] ldshim_dlmopen_fn ldshim_hook_dlmopen_decide(const void* caller, long lmid,
                                                                           const char* file, int mode, void** handle) {
    auto real = reinterpret_cast<ldshim_dlmopen_fn>(loader_next(HookId::k_dlmopen, caller));
    return ldshim_dlmopen_decide(real, lmid, caller, file, mode, handle);
}

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

LDSHIM_DLOPEN_ENTRY(ldshim_hook_dlopen, ldshim_hook_dlopen_decide, 1);
LDSHIM_DLMOPEN_ENTRY(ldshim_hook_dlmopen, ldshim_hook_dlmopen_decide, 1);
#if LDSHIM_HAVE_DLOPEN_ENTRY
LDSHIM_ENTRY3(ldshim_hook_dlsym, ldshim_hook_dlsym_decide, 1);
LDSHIM_ENTRY3(ldshim_hook_dlvsym, ldshim_hook_dlvsym_decide, 1);
#endif
