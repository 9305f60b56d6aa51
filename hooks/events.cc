#include "hooks/events.h"

#include "ldshim.h"

#include <dlfcn.h>
#include <pthread.h>

#include <cstring>
#include <mutex>

namespace ldshim::hooks {

std::atomic<bool> g_recording{false};

namespace {

// initial-exec: no allocation or loader lock on first use in a thread, even
// when libldshim was dlopen'ed (it then comes from the static TLS surplus).
__thread int t_depth __attribute__((tls_model("initial-exec")));

// Subscribers: a seqlock per slot, so a hook reads (callback, arg) without
// a lock and never sees a torn pair.
constexpr int kMaxSubscribers = 16;
struct Slot {
    std::atomic<unsigned> seq{0};
    std::atomic<Callback> cb{nullptr};
    std::atomic<void*> arg{nullptr};
};
Slot g_subs[kMaxSubscribers];
// One past the highest slot ever taken: an event reads no slot when nobody
// ever subscribed, and only those up to it otherwise.
std::atomic<int> g_subs_end{0};
std::mutex g_subs_mu;

void notify(ldshim_event_kind_t kind, memtype::Type type, int device, std::uintptr_t base, std::size_t length,
            const char* fn) {
    ldshim_mem_event_t ev{
        kind, static_cast<ldshim_memtype_t>(type), device, reinterpret_cast<const void*>(base), length, fn};
    int end = g_subs_end.load(std::memory_order_acquire);
    if (end == 0) return;
    for (int i = 0; i < end; ++i) {
        Slot& s = g_subs[i];
        Callback cb;
        void* arg;
        unsigned a, b;
        do {
            // Acquire loads keep the second read of seq after the data.
            a = s.seq.load(std::memory_order_acquire);
            cb = s.cb.load(std::memory_order_acquire);
            arg = s.arg.load(std::memory_order_acquire);
            b = s.seq.load(std::memory_order_relaxed);
        } while (a != b || (a & 1));
        if (cb) cb(&ev, arg);
    }
}

struct Companions {
    std::atomic<int (*)(int*)> cuda_get_device{nullptr};
    std::atomic<int (*)(int*)> cu_ctx_get_device{nullptr};
    std::atomic<int (*)(unsigned long long*, std::size_t*, unsigned long long)> cu_range{nullptr};
    std::atomic<int (*)(void*, unsigned long long)> cu_props{nullptr};
};
Companions g_comp;

}  // namespace

ReentryGuard::ReentryGuard() noexcept : record_(t_depth++ == 0 && g_recording.load(std::memory_order_relaxed)) {}
ReentryGuard::~ReentryGuard() { --t_depth; }

void on_alloc(memtype::Type type, std::uintptr_t base, std::size_t length, int device, const char* fn) {
    if (!base || !length) return;
    try {
        memtype::Registry::global().insert(base, length, type, device);
    } catch (...) {
        return;  // out of memory: the range stays unknown, never wrong
    }
    notify(LDSHIM_EVENT_ALLOC, type, device, base, length, fn);
}

namespace {
// [base, base+length), which the registry described as `was`, is gone.
Removed freed(const memtype::Info& was, std::uintptr_t base, std::size_t length, const char* fn) {
    notify(LDSHIM_EVENT_FREE, was.type, was.device, base, length, fn);
    return {true, was.type, was.device, base, length};
}
// Removes [base, base+length), which the registry describes as `was`.
Removed remove_range(std::uintptr_t base, std::size_t length, const memtype::Info& was, const char* fn) {
    try {
        memtype::Registry::global().remove(base, length);
    } catch (...) {
        return {};
    }
    return freed(was, base, length, fn);
}
}  // namespace

Removed on_free(std::uintptr_t base, const char* fn) {
    if (!base) return {};
    memtype::Info was;
    try {
        if (!memtype::Registry::global().remove_range_at(base, &was)) return {};
    } catch (...) {
        return {};  // out of memory: the range stays registered
    }
    return freed(was, base, was.length, fn);
}

Removed on_free_range(std::uintptr_t base, std::size_t length, const char* fn) {
    if (!base || !length) return {};
    return remove_range(base, length, memtype::Registry::global().lookup(base), fn);
}

void undo_free(const Removed& r, const char* fn) {
    if (r.any && r.type != memtype::Type::unregistered) on_alloc(r.type, r.base, r.length, r.device, fn);
}

bool subscribe(Callback cb, void* arg) {
    std::lock_guard lock(g_subs_mu);
    for (int i = 0; i < kMaxSubscribers; ++i) {
        Slot& s = g_subs[i];
        if (s.cb.load(std::memory_order_relaxed)) continue;
        s.seq.fetch_add(1, std::memory_order_acq_rel);  // odd: being written
        s.arg.store(arg, std::memory_order_relaxed);
        s.cb.store(cb, std::memory_order_relaxed);
        s.seq.fetch_add(1, std::memory_order_release);
        if (g_subs_end.load(std::memory_order_relaxed) <= i) g_subs_end.store(i + 1, std::memory_order_release);
        return true;
    }
    return false;
}

bool unsubscribe(Callback cb, void* arg) {
    std::lock_guard lock(g_subs_mu);
    for (Slot& s : g_subs) {
        if (s.cb.load(std::memory_order_relaxed) != cb || s.arg.load(std::memory_order_relaxed) != arg) continue;
        s.seq.fetch_add(1, std::memory_order_acq_rel);
        s.cb.store(nullptr, std::memory_order_relaxed);
        s.arg.store(nullptr, std::memory_order_relaxed);
        s.seq.fetch_add(1, std::memory_order_release);
        return true;
    }
    return false;
}

int runtime_device() {
    int d = -1;
    auto f = g_comp.cuda_get_device.load(std::memory_order_acquire);
    return f && f(&d) == 0 ? d : -1;
}

int driver_device() {
    int d = -1;
    auto f = g_comp.cu_ctx_get_device.load(std::memory_order_acquire);
    return f && f(&d) == 0 ? d : -1;
}

bool driver_range(std::uintptr_t p, std::uintptr_t* base, std::size_t* size) {
    auto f = g_comp.cu_range.load(std::memory_order_acquire);
    unsigned long long b = 0;
    if (!f || f(&b, size, p) != 0) return false;
    *base = static_cast<std::uintptr_t>(b);
    return true;
}

bool driver_handle_location(unsigned long long handle, int* location_type, int* id) {
    auto f = g_comp.cu_props.load(std::memory_order_acquire);
    // CUmemAllocationProp: type, requestedHandleTypes, then the location
    // {type, id}; 64 bytes in CUDA 13, room to spare here.
    alignas(8) unsigned char prop[256] = {};
    if (!f || f(prop, handle) != 0) return false;
    __builtin_memcpy(location_type, prop + 8, sizeof(int));
    __builtin_memcpy(id, prop + 12, sizeof(int));
    return true;
}

namespace {

void adopt_driver(void* h) {
    if (void* f = dlsym(h, "cuCtxGetDevice")) g_comp.cu_ctx_get_device.store(reinterpret_cast<int (*)(int*)>(f));
    if (void* f = dlsym(h, "cuMemGetAddressRange_v2"))
        g_comp.cu_range.store(reinterpret_cast<int (*)(unsigned long long*, std::size_t*, unsigned long long)>(f));
    if (void* f = dlsym(h, "cuMemGetAllocationPropertiesFromHandle"))
        g_comp.cu_props.store(reinterpret_cast<int (*)(void*, unsigned long long)>(f));
}

}  // namespace

void adopt_companions(const void* fn, HookKind kind) {
    if (kind == HookKind::loader) return;
    Dl_info info;
    if (!fn || !dladdr(fn, &info) || !info.dli_fname) return;
    bool runtime = kind == HookKind::runtime || (info.dli_sname && std::strncmp(info.dli_sname, "cuda", 4) == 0);
    if (runtime ? g_comp.cuda_get_device.load() != nullptr : g_comp.cu_ctx_get_device.load() != nullptr) return;
    // The defining library's own handle (the main program's name is "").
    void* h = dlopen(info.dli_fname[0] ? info.dli_fname : nullptr, RTLD_LAZY | RTLD_NOLOAD);
    if (!h) return;
    if (runtime) {
        if (void* f = dlsym(h, "cudaGetDevice")) g_comp.cuda_get_device.store(reinterpret_cast<int (*)(int*)>(f));
    } else {
        adopt_driver(h);
    }
    dlclose(h);
    (void)dlerror();  // a missing companion must not surface in the program's dlerror()
    if (runtime) ensure_driver_companions();
}

// The runtime has no "size of this allocation" call (IPC handles need one):
// take the driver's, from the libcuda.so.1 that cudart has loaded.
void ensure_driver_companions() {
    if (g_comp.cu_range.load(std::memory_order_acquire)) return;
    if (void* h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD)) {
        adopt_driver(h);
        dlclose(h);
    }
    (void)dlerror();
}

void subscribers_fork_prepare() { g_subs_mu.lock(); }
void subscribers_fork_release() { g_subs_mu.unlock(); }

}  // namespace ldshim::hooks
