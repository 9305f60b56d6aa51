// The hooks on the loader's entry points.  dlopen and dlclose let the patcher
// see new and vanished objects at once (and dlopen resolves from the true
// caller, which is ldshim's whole point); dlsym and dlvsym hand out the hook
// for a hooked CUDA name, so function pointers fetched by name are hooked
// too; the proc-address mapper does the same for cuGetProcAddress.
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

// Returns the hook for a CUDA function found by name, publishing the
// function as what the hook calls when nothing else was known.
void* hooked(void* found, int id, const char* version) {
    if (!found || id < 0 || !g_recording.load(std::memory_order_acquire)) return found;
    const HookDef& def = hook_def(id);
    // Loader functions are returned as they are: a dlopen wrapper that looks
    // up "dlopen" by name must get glibc's, or it would call ldshim's hook
    // from its own code and be taken for the caller.
    if (def.kind == HookKind::loader) return found;
    if (def.version && version && std::strcmp(def.version, version) != 0) return found;
    if (reinterpret_cast<void*>(def.fn) == found) return found;
    void* expected = nullptr;
    if (g_next[id].compare_exchange_strong(expected, found)) adopt_companions(found, def.kind);
    g_active_paths.fetch_or(def.kind == HookKind::proc ? LDSHIM_PATH_PROC_ADDRESS : 0, std::memory_order_relaxed);
    return def.fn;
}

// dlsym(RTLD_DEFAULT) searches the caller's scope: the global scope, then
// (for an RTLD_LOCAL library) its own dependencies.  Looked up from here,
// only the first part is seen, so the second is added by hand.
void* lookup_default(const void* caller, const char* name, const char* version) {
    using dlsym_fn = void* (*)(void*, const char*);
    using dlvsym_fn = void* (*)(void*, const char*, const char*);
    auto sym = next<dlsym_fn>(HookId::k_dlsym);
    auto vsym = next<dlvsym_fn>(HookId::k_dlvsym);
    auto look = [&](void* h) -> void* {
        if (version) return vsym ? vsym(h, name, version) : dlvsym(h, name, version);
        return sym ? sym(h, name) : dlsym(h, name);
    };
    void* f = look(RTLD_DEFAULT);
    if (f) return f;
    Dl_info info;
    link_map* lm = nullptr;
    if (dladdr1(caller, &info, reinterpret_cast<void**>(&lm), RTLD_DL_LINKMAP) && lm) {
        f = look(lm);
        if (f) (void)dlerror();  // the first miss left an error behind
    }
    return f;
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

// Reached through the trampolines below with the caller's return address
// still on the stack, so __builtin_return_address(0) is the true caller.
[[gnu::visibility("hidden")]] void* ldshim_hook_dlsym_c(void* handle, const char* name) {
    const void* caller = __builtin_return_address(0);
    void* f = handle == RTLD_DEFAULT ? lookup_default(caller, name, nullptr)
                                     : next<void* (*)(void*, const char*)>(HookId::k_dlsym)(handle, name);
    return name ? hooked(f, find_hook(name), nullptr) : f;
}

[[gnu::visibility("hidden")]] void* ldshim_hook_dlvsym_c(void* handle, const char* name, const char* version) {
    const void* caller = __builtin_return_address(0);
    void* f = handle == RTLD_DEFAULT
                  ? lookup_default(caller, name, version)
                  : next<void* (*)(void*, const char*, const char*)>(HookId::k_dlvsym)(handle, name, version);
    return name ? hooked(f, find_hook(name), version) : f;
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

// dlsym(RTLD_NEXT) names the caller's successor, found from the return
// address: it must reach glibc with the caller's frame untouched, so these
// entry points jump (not call) to it; everything else goes to the C halves
// above, also by a jump.  The "next" pointers of dlsym and dlvsym are
// g_next[2] and g_next[3] (checked below).
static_assert(static_cast<int>(HookId::k_dlsym) == 2 && static_cast<int>(HookId::k_dlvsym) == 3);
static_assert(sizeof(std::atomic<void*>) == sizeof(void*));
extern "C" [[gnu::visibility("hidden")]] std::atomic<void*>* const ldshim_next_table = g_next;

#if LDSHIM_HAVE_DLOPEN_ENTRY
LDSHIM_DLOPEN_ENTRY(ldshim_hook_dlopen, ldshim_hook_dlopen_decide, 1);
LDSHIM_DLMOPEN_ENTRY(ldshim_hook_dlmopen, ldshim_hook_dlmopen_decide, 1);
#endif

#if defined(__x86_64__)
__asm__(
    ".text\n"
    ".p2align 4\n"
    ".globl ldshim_hook_dlsym\n"
    ".hidden ldshim_hook_dlsym\n"
    ".type ldshim_hook_dlsym, @function\n"
    "ldshim_hook_dlsym:\n"
    "    cmpq $-1, %rdi\n"  // RTLD_NEXT
    "    jne ldshim_hook_dlsym_c\n"
    "    movq ldshim_next_table(%rip), %rax\n"
    "    jmpq *16(%rax)\n"
    ".size ldshim_hook_dlsym, .-ldshim_hook_dlsym\n"
    ".p2align 4\n"
    ".globl ldshim_hook_dlvsym\n"
    ".hidden ldshim_hook_dlvsym\n"
    ".type ldshim_hook_dlvsym, @function\n"
    "ldshim_hook_dlvsym:\n"
    "    cmpq $-1, %rdi\n"
    "    jne ldshim_hook_dlvsym_c\n"
    "    movq ldshim_next_table(%rip), %rax\n"
    "    jmpq *24(%rax)\n"
    ".size ldshim_hook_dlvsym, .-ldshim_hook_dlvsym\n");
#elif defined(__aarch64__)
// "hint #34": BTI's landing pad; "b" rather than "b.ne" reaches the C half
// wherever the linker puts it.
__asm__(
    ".text\n"
    ".p2align 4\n"
    ".globl ldshim_hook_dlsym\n"
    ".hidden ldshim_hook_dlsym\n"
    ".type ldshim_hook_dlsym, %function\n"
    "ldshim_hook_dlsym:\n"
    "    hint #34\n"
    "    cmn x0, #1\n"  // RTLD_NEXT
    "    b.eq 1f\n"
    "    b ldshim_hook_dlsym_c\n"
    "1:  adrp x16, ldshim_next_table\n"
    "    ldr x16, [x16, #:lo12:ldshim_next_table]\n"
    "    ldr x16, [x16, #16]\n"
    "    br x16\n"
    ".size ldshim_hook_dlsym, .-ldshim_hook_dlsym\n"
    ".p2align 4\n"
    ".globl ldshim_hook_dlvsym\n"
    ".hidden ldshim_hook_dlvsym\n"
    ".type ldshim_hook_dlvsym, %function\n"
    "ldshim_hook_dlvsym:\n"
    "    hint #34\n"
    "    cmn x0, #1\n"
    "    b.eq 1f\n"
    "    b ldshim_hook_dlvsym_c\n"
    "1:  adrp x16, ldshim_next_table\n"
    "    ldr x16, [x16, #:lo12:ldshim_next_table]\n"
    "    ldr x16, [x16, #24]\n"
    "    br x16\n"
    ".size ldshim_hook_dlvsym, .-ldshim_hook_dlvsym\n");
#endif
