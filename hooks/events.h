// What a CUDA hook does around the real call: a per-thread reentrancy
// guard (cudart calls the driver; only the outermost hooked call records),
// registry updates (insert after a successful allocation, remove before the
// real free), subscriber callbacks, and the few driver/runtime queries a hook
// needs (current device, allocation size).  No locks on this path except the
// registry's writer lock, which every insert or remove takes.
#pragma once

#include "hooks/table.h"
#include "ldshim.h"
#include "memtype/registry.h"

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace ldshim::hooks {

// Set while hooks are installed; hooks reached after uninstall (through a
// pointer handed out earlier) still call through but record nothing.
extern std::atomic<bool> g_recording;

class ReentryGuard {
public:
    ReentryGuard() noexcept;
    ~ReentryGuard();
    ReentryGuard(const ReentryGuard&) = delete;
    ReentryGuard& operator=(const ReentryGuard&) = delete;
    // True for the outermost hooked call on this thread, while recording.
    bool record() const noexcept { return record_; }

private:
    bool record_;
};

void on_alloc(memtype::Type type, std::uintptr_t base, std::size_t length, int device, const char* fn);

// A range removed before a free, so that a failed free can put it back.
struct Removed {
    bool any = false;
    memtype::Type type = memtype::Type::unregistered;
    int device = -1;
    std::uintptr_t base = 0;
    std::size_t length = 0;
};
// Removes the registered range that starts at base (nothing if base is not
// the start of one).
Removed on_free(std::uintptr_t base, const char* fn);
// Removes [base, base+length) (cuMemUnmap).
Removed on_free_range(std::uintptr_t base, std::size_t length, const char* fn);
// The real free failed: the memory is still allocated.
void undo_free(const Removed& r, const char* fn);

// Subscribers (the C API's ldshim_hooks_subscribe).
using Callback = ldshim_mem_callback_t;
bool subscribe(Callback cb, void* arg);
bool unsubscribe(Callback cb, void* arg);
// fork(): lib/fork_handlers.cc holds the subscriber lock across it.
void subscribers_fork_prepare();
void subscribers_fork_release();

// Companion functions of the CUDA library a hook's target lives in.
int runtime_device();  // cudaGetDevice, or -1
int driver_device();   // cuCtxGetDevice, or -1
// cuMemGetAddressRange_v2: the allocation containing p.
bool driver_range(std::uintptr_t p, std::uintptr_t* base, std::size_t* size);
// cuMemGetAllocationPropertiesFromHandle: the location type and id of a
// cuMemCreate handle.
bool driver_handle_location(unsigned long long handle, int* location_type, int* id);
// Looks the companions up in the library that defines `fn` (once each).
// Takes loader locks: never call it inside dl_iterate_phdr.
void adopt_companions(const void* fn, HookKind kind);
// Takes the driver's from an already loaded libcuda.so.1 if still missing.
void ensure_driver_companions();

// For cuGetProcAddress and cudaGetDriverEntryPoint: the hook for a driver
// function pointer the real call returned (the variant the driver chose for
// the requested version and flags), or the pointer unchanged.
void* hook_proc_address(void* fn);

// For the dlsym and dlvsym front entries (resolver/front_entries.cc): the
// function the call goes on to (glibc's, by a jump), or nullptr with the
// answer in *result -- the hook, handed out for a hooked CUDA name.
void* sym_decide(HookId which, const void* caller, void* handle, const char* name, const char* version, void** result);

}  // namespace ldshim::hooks
