// What each CUDA hook adds to a call: every hooked allocation and free of
// the runtime and the driver, called directly and through ldshim's hook, in
// one run, against the minimal libcudart.so.13 and libcuda.so.1 of
// bench/fixtures (each call a few instructions that succeed, so what is
// left is the hook: its guard, what it calls, the device query, the
// registry insert or remove, the subscriber dispatch).
//
//   build-release/bench/hooks_bench [--rounds N] [--live N] [--quick]
//
// --live N registers N ranges below all the others first (longer-lived
// allocations), so that the ranges a round frees in order are not the
// registry's first ones.
//
// Each round calls one allocation function kBatch times (kBatch live ranges
// at the end), then its free kBatch times, directly and then through the
// hook (the order alternates between rounds); a row gives the medians over
// the rounds of the time per call, and the median of each round's
// difference.  "Direct" calls the function the program's import slot held
// before the hooks were installed, "hooked" what it holds after; both go
// through the same indirect call.  The benchmark fails (status 1) if a hook
// did not register or remove a range, or the hooks did not install.
#include "ldshim.h"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern "C" {
#include "cuda_decls.h"  // tests/hooks/fixtures: the types and most of the functions
using Ipc = CUipcMemHandle;
using PitchedPtr = cudaPitchedPtr;
using Extent = cudaExtent;
using MemProp = CUmemAllocationProp;
int cuMemAlloc(unsigned*, unsigned);
int cuMemAllocPitch(unsigned*, unsigned*, unsigned, unsigned, unsigned);
int cuMemAllocAsync_ptsz(CUdeviceptr*, size_t, void*);
int cuMemAllocFromPoolAsync(CUdeviceptr*, size_t, void*, void*);
int cuMemAllocFromPoolAsync_ptsz(CUdeviceptr*, size_t, void*, void*);
int cuMemAllocHost(void**, unsigned);
int cuMemHostRegister(void*, size_t, unsigned);
int cuIpcOpenMemHandle(CUdeviceptr*, Ipc, unsigned);
int cuMemFree(unsigned);
int cuMemFreeAsync_ptsz(CUdeviceptr, void*);
}

namespace {

constexpr int kBatch = 256;
constexpr std::size_t kSize = 4096;
// Addresses the caller supplies (cudaHostRegister, cuMemMap): below the
// fixtures' own, never touched.
constexpr std::uintptr_t kUserBase = 0x20000000;
// --live: ranges registered below everything else, 64 KiB apart.
constexpr std::uintptr_t kLiveBase = 0x01000000;
constexpr int kMaxLive = (kUserBase - kLiveBase) >> 16;

std::uintptr_t g_ptr[kBatch];  // what the allocations of a batch returned
unsigned long long g_vmm = 0;  // a cuMemCreate handle

using Fn = void*;
// One allocation (call i of a batch) or free through fn; returns the
// function's result.
using AllocCall = int (*)(Fn fn, int i);
using FreeCall = int (*)(Fn fn, int i);

struct Entry {
    const char* alloc;
    const char* free;
    Fn (*alloc_slot)();  // the program's import slot, read now
    Fn (*free_slot)();
    AllocCall do_alloc;
    FreeCall do_free;
    bool registers;  // whether the allocation is in the registry afterwards
};

// The value of the import slot for `name` right now (the compiler must not
// keep it from an earlier read: a slot changes under it).
#define SLOT_OF(name) [] { return reinterpret_cast<Fn>(&(name)); }

template <class T>
T as(Fn f) {
    return reinterpret_cast<T>(f);
}
void* vp(std::uintptr_t p) { return reinterpret_cast<void*>(p); }
std::uintptr_t up(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

int free32(Fn f, int i) { return as<decltype(&cuMemFree)>(f)(static_cast<unsigned>(g_ptr[i])); }

// clang-format off
#define RT_PTR(decl, call)                                            \
    [](Fn f, int i) {                                                 \
        void* p = nullptr;                                            \
        int r = as<decltype(&decl)>(f) call;                          \
        g_ptr[i] = up(p);                                             \
        return r;                                                     \
    }
#define DRV_PTR(decl, call)                                           \
    [](Fn f, int i) {                                                 \
        CUdeviceptr p = 0;                                            \
        int r = as<decltype(&decl)>(f) call;                          \
        g_ptr[i] = static_cast<std::uintptr_t>(p);                    \
        return r;                                                     \
    }
#define RT_FREE(decl, call) [](Fn f, int i) { void* p = vp(g_ptr[i]); return as<decltype(&decl)>(f) call; }
#define DRV_FREE(decl, call) [](Fn f, int i) { CUdeviceptr p = g_ptr[i]; return as<decltype(&decl)>(f) call; }
// The rest: the allocation call, the free call, whether it registers.
#define E(a, fr, ...) {#a, #fr, SLOT_OF(a), SLOT_OF(fr), __VA_ARGS__}

const Entry kEntries[] = {
    E(cudaMalloc, cudaFree, RT_PTR(cudaMalloc, (&p, kSize)), RT_FREE(cudaFree, (p)), true),
    E(cudaMallocManaged, cudaFree, RT_PTR(cudaMallocManaged, (&p, kSize, 1)), RT_FREE(cudaFree, (p)), true),
    E(cudaMallocPitch, cudaFree,
      [](Fn f, int i) { void* p = nullptr; size_t pitch = 0;
                        int r = as<decltype(&cudaMallocPitch)>(f)(&p, &pitch, 1000, 4); g_ptr[i] = up(p); return r; },
      RT_FREE(cudaFree, (p)), true),
    E(cudaMalloc3D, cudaFree,
      [](Fn f, int i) { PitchedPtr pp{}; int r = as<decltype(&cudaMalloc3D)>(f)(&pp, Extent{1000, 2, 2});
                        g_ptr[i] = up(pp.ptr); return r; },
      RT_FREE(cudaFree, (p)), true),
    E(cudaMallocAsync, cudaFreeAsync, RT_PTR(cudaMallocAsync, (&p, kSize, nullptr)),
      RT_FREE(cudaFreeAsync, (p, nullptr)), true),
    E(cudaMallocAsync_ptsz, cudaFreeAsync_ptsz, RT_PTR(cudaMallocAsync_ptsz, (&p, kSize, nullptr)),
      RT_FREE(cudaFreeAsync_ptsz, (p, nullptr)), true),
    E(cudaMallocFromPoolAsync, cudaFreeAsync, RT_PTR(cudaMallocFromPoolAsync, (&p, kSize, nullptr, nullptr)),
      RT_FREE(cudaFreeAsync, (p, nullptr)), true),
    E(cudaMallocFromPoolAsync_ptsz, cudaFreeAsync_ptsz,
      RT_PTR(cudaMallocFromPoolAsync_ptsz, (&p, kSize, nullptr, nullptr)), RT_FREE(cudaFreeAsync_ptsz, (p, nullptr)),
      true),
    E(cudaMallocHost, cudaFreeHost, RT_PTR(cudaMallocHost, (&p, kSize)), RT_FREE(cudaFreeHost, (p)), true),
    E(cudaHostAlloc, cudaFreeHost, RT_PTR(cudaHostAlloc, (&p, kSize, 0)), RT_FREE(cudaFreeHost, (p)), true),
    E(cudaHostRegister, cudaHostUnregister,
      [](Fn f, int i) { g_ptr[i] = kUserBase + (std::uintptr_t(i) << 16);
                        return as<decltype(&cudaHostRegister)>(f)(vp(g_ptr[i]), kSize, 0); },
      RT_FREE(cudaHostUnregister, (p)), true),
    E(cudaIpcOpenMemHandle, cudaIpcCloseMemHandle, RT_PTR(cudaIpcOpenMemHandle, (&p, cudaIpcMemHandle_t{}, 1)),
      RT_FREE(cudaIpcCloseMemHandle, (p)), true),
    E(cuMemAlloc, cuMemFree,
      [](Fn f, int i) { unsigned p = 0; int r = as<decltype(&cuMemAlloc)>(f)(&p, kSize); g_ptr[i] = p; return r; },
      free32, true),
    E(cuMemAlloc_v2, cuMemFree_v2, DRV_PTR(cuMemAlloc_v2, (&p, kSize)), DRV_FREE(cuMemFree_v2, (p)), true),
    E(cuMemAllocPitch, cuMemFree,
      [](Fn f, int i) { unsigned p = 0, pitch = 0;
                        int r = as<decltype(&cuMemAllocPitch)>(f)(&p, &pitch, 1000, 4, 4); g_ptr[i] = p; return r; },
      free32, true),
    E(cuMemAllocPitch_v2, cuMemFree_v2,
      [](Fn f, int i) { CUdeviceptr p = 0; size_t pitch = 0;
                        int r = as<decltype(&cuMemAllocPitch_v2)>(f)(&p, &pitch, 1000, 4, 4); g_ptr[i] = p;
                        return r; },
      DRV_FREE(cuMemFree_v2, (p)), true),
    E(cuMemAllocManaged, cuMemFree_v2, DRV_PTR(cuMemAllocManaged, (&p, kSize, 1)), DRV_FREE(cuMemFree_v2, (p)), true),
    E(cuMemAllocAsync, cuMemFreeAsync, DRV_PTR(cuMemAllocAsync, (&p, kSize, nullptr)),
      DRV_FREE(cuMemFreeAsync, (p, nullptr)), true),
    E(cuMemAllocAsync_ptsz, cuMemFreeAsync_ptsz, DRV_PTR(cuMemAllocAsync_ptsz, (&p, kSize, nullptr)),
      DRV_FREE(cuMemFreeAsync_ptsz, (p, nullptr)), true),
    E(cuMemAllocFromPoolAsync, cuMemFreeAsync, DRV_PTR(cuMemAllocFromPoolAsync, (&p, kSize, nullptr, nullptr)),
      DRV_FREE(cuMemFreeAsync, (p, nullptr)), true),
    E(cuMemAllocFromPoolAsync_ptsz, cuMemFreeAsync_ptsz,
      DRV_PTR(cuMemAllocFromPoolAsync_ptsz, (&p, kSize, nullptr, nullptr)), DRV_FREE(cuMemFreeAsync_ptsz, (p, nullptr)),
      true),
    E(cuMemAllocHost, cuMemFreeHost,
      RT_PTR(cuMemAllocHost, (&p, kSize)), RT_FREE(cuMemFreeHost, (p)), true),
    E(cuMemAllocHost_v2, cuMemFreeHost, RT_PTR(cuMemAllocHost_v2, (&p, kSize)), RT_FREE(cuMemFreeHost, (p)), true),
    E(cuMemHostAlloc, cuMemFreeHost, RT_PTR(cuMemHostAlloc, (&p, kSize, 0)), RT_FREE(cuMemFreeHost, (p)), true),
    E(cuMemHostRegister, cuMemHostUnregister,
      [](Fn f, int i) { g_ptr[i] = kUserBase + (std::uintptr_t(i) << 16);
                        return as<decltype(&cuMemHostRegister)>(f)(vp(g_ptr[i]), kSize, 0); },
      RT_FREE(cuMemHostUnregister, (p)), true),
    E(cuMemHostRegister_v2, cuMemHostUnregister,
      [](Fn f, int i) { g_ptr[i] = kUserBase + (std::uintptr_t(i) << 16);
                        return as<decltype(&cuMemHostRegister_v2)>(f)(vp(g_ptr[i]), kSize, 0); },
      RT_FREE(cuMemHostUnregister, (p)), true),
    E(cuIpcOpenMemHandle, cuIpcCloseMemHandle, DRV_PTR(cuIpcOpenMemHandle, (&p, Ipc{}, 1)),
      DRV_FREE(cuIpcCloseMemHandle, (p)), true),
    E(cuIpcOpenMemHandle_v2, cuIpcCloseMemHandle, DRV_PTR(cuIpcOpenMemHandle_v2, (&p, Ipc{}, 1)),
      DRV_FREE(cuIpcCloseMemHandle, (p)), true),
    E(cuMemMap, cuMemUnmap,
      [](Fn f, int i) { g_ptr[i] = kUserBase + (std::uintptr_t(i) << 16);
                        return as<decltype(&cuMemMap)>(f)(g_ptr[i], kSize, 0, g_vmm, 0); },
      [](Fn f, int i) { return as<decltype(&cuMemUnmap)>(f)(g_ptr[i], kSize); }, true),
    // A call that fails registers nothing: the hook's own floor.
    E(cudaMalloc, cudaFree, RT_PTR(cudaMalloc, (&p, 0)), [](Fn, int) { return 0; }, false),
};
// clang-format on
constexpr int kEntryCount = sizeof kEntries / sizeof kEntries[0];

double now_ns() {
    return static_cast<double>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
}

struct Times {
    double alloc, free;
};
// One batch: kBatch allocations, then their frees; ns per call.
[[gnu::noinline]] Times batch(const Entry& e, Fn a, Fn f) {
    double t0 = now_ns();
    for (int i = 0; i < kBatch; ++i) e.do_alloc(a, i);
    double t1 = now_ns();
    for (int i = 0; i < kBatch; ++i) e.do_free(f, i);
    double t2 = now_ns();
    return {(t1 - t0) / kBatch, (t2 - t1) / kBatch};
}

// Called through a pointer the compiler cannot see through, so that the slot
// is read again after the hooks are installed.
Fn read_slot(Fn (*f)()) {
    Fn (*volatile g)() = f;
    return g();
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    std::size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

bool registered(std::uintptr_t p) {
    ldshim_meminfo_t info;
    return ldshim_memtype_query(vp(p), 1, &info) == LDSHIM_OK && info.type != LDSHIM_MEM_UNREGISTERED;
}

// The hooks register and remove: one allocation and its free, checked.
bool check(const Entry& e, Fn a, Fn f) {
    int ra = e.do_alloc(a, 0);
    bool in = registered(g_ptr[0]);
    int rf = e.do_free(f, 0);
    bool out = registered(g_ptr[0]);
    if (!e.registers) return ra != 0 && !in;
    if (ra != 0 || rf != 0 || !in || out) {
        std::fprintf(stderr,
                     "hooks_bench: %s + %s: result %d/%d, registered after the allocation %d, after the free %d\n",
                     e.alloc, e.free, ra, rf, in, out);
        return false;
    }
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    int rounds = 301, live = 0;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--quick") == 0) {
            rounds = 3;
        } else if (std::strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
            rounds = std::max(1, std::atoi(argv[++i]));
        } else if (std::strcmp(argv[i], "--live") == 0 && i + 1 < argc) {
            live = std::clamp(std::atoi(argv[++i]), 0, kMaxLive);
        } else {
            std::fprintf(stderr, "usage: hooks_bench [--rounds N] [--live N] [--quick]\n");
            return 2;
        }
    }
    for (int i = 0; i < live; ++i)
        ldshim_memtype_insert(vp(kLiveBase + (std::uintptr_t(i) << 16)), kSize, LDSHIM_MEM_CUDA, 0);
    Fn direct_a[kEntryCount], direct_f[kEntryCount], hooked_a[kEntryCount], hooked_f[kEntryCount];
    for (int k = 0; k < kEntryCount; ++k) {
        direct_a[k] = read_slot(kEntries[k].alloc_slot);
        direct_f[k] = read_slot(kEntries[k].free_slot);
    }
    if (int rc = ldshim_hooks_install(LDSHIM_HOOK_CUDA); rc != LDSHIM_OK) {
        std::fprintf(stderr, "hooks_bench: ldshim_hooks_install: %s\n", ldshim_strerror(rc));
        return 1;
    }
    MemProp prop{};
    prop.type = 1;
    prop.location.type = 1;
    cuMemCreate(&g_vmm, kSize, &prop, 0);
    bool ok = true;
    for (int k = 0; k < kEntryCount; ++k) {
        const Entry& e = kEntries[k];
        hooked_a[k] = read_slot(e.alloc_slot);
        hooked_f[k] = read_slot(e.free_slot);
        if (hooked_a[k] == direct_a[k] || hooked_f[k] == direct_f[k]) {
            std::fprintf(stderr, "hooks_bench: %s or %s is not hooked\n", e.alloc, e.free);
            ok = false;
        } else {
            // A direct call registers nothing; a hooked one registers and removes.
            e.do_alloc(direct_a[k], 0);
            bool leaked = registered(g_ptr[0]);
            e.do_free(direct_f[k], 0);
            if (leaked) std::fprintf(stderr, "hooks_bench: %s registered a range called directly\n", e.alloc);
            ok = !leaked && check(e, hooked_a[k], hooked_f[k]) && ok;
        }
    }
    if (!ok) return 1;

    std::printf(
        "%d rounds of %d calls, %d other ranges registered; medians of ns per call, and of each round's "
        "difference\n",
        rounds, kBatch, live);
    std::printf("%-30s %8s %8s %8s %7s | %-20s %8s %8s %8s %7s\n", "allocation", "direct", "hooked", "added", "ratio",
                "free", "direct", "hooked", "added", "ratio");
    double worst = 0, pair_async = 0;
    for (int k = 0; k < kEntryCount; ++k) {
        const Entry& e = kEntries[k];
        std::vector<double> da, df, ha, hf, xa, xf;
        for (int r = -2; r < rounds; ++r) {  // two warm-up rounds
            Times d, h;
            if (r % 2) {
                d = batch(e, direct_a[k], direct_f[k]);
                h = batch(e, hooked_a[k], hooked_f[k]);
            } else {
                h = batch(e, hooked_a[k], hooked_f[k]);
                d = batch(e, direct_a[k], direct_f[k]);
            }
            if (r < 0) continue;
            da.push_back(d.alloc);
            df.push_back(d.free);
            ha.push_back(h.alloc);
            hf.push_back(h.free);
            xa.push_back(h.alloc - d.alloc);
            xf.push_back(h.free - d.free);
        }
        double ma = median(xa), mf = median(xf);
        std::string label = e.registers ? e.alloc : std::string(e.alloc) + " (fails)";
        if (e.registers) {
            std::printf("%-30s %8.1f %8.1f %8.1f %6.1fx | %-20s %8.1f %8.1f %8.1f %6.1fx\n", label.c_str(), median(da),
                        median(ha), ma, median(ha) / median(da), e.free, median(df), median(hf), mf,
                        median(hf) / median(df));
            worst = std::max({worst, ma, mf});
        } else {
            std::printf("%-30s %8.1f %8.1f %8.1f %6.1fx\n", label.c_str(), median(da), median(ha), ma,
                        median(ha) / median(da));
        }
        if (std::strcmp(e.alloc, "cudaMallocAsync") == 0) pair_async = ma + mf;
    }
    std::printf("\nmost added by one hooked call: %.1f ns (goal: at most 20)\n", worst);
    std::printf("cudaMallocAsync + cudaFreeAsync: %.1f ns added per pair; %.1f %% of a 645 ns GPU pair\n", pair_async,
                100 * pair_async / 645);
    return 0;
}
