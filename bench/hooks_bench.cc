// What each CUDA hook adds to a call: every hooked allocation and free of
// the runtime and the driver, called directly and through ldshim's hook, in
// one run, against the minimal libcudart.so.13 and libcuda.so.1 of
// bench/fixtures (each call a few instructions that succeed, so what is
// left is the hook: its guard, what it calls, the device query, the
// registry insert or remove, the subscriber dispatch).  The same rounds time
// UCX master's ucm CUDA hooks with UCS's memtype cache subscribed, in a
// worker process (hooks_bench_ucm.cc), and then allocating threads with a
// thread querying the registry (hooks_bench_threads.cc).
//
//   build-release/bench/hooks_bench [--rounds N] [--live N] [--quick] [--ucx PREFIX|--no-ucx]
//
// --live N registers N ranges below all the others first (longer-lived
// allocations), so that the ranges a round frees in order are not the
// registry's first ones.  --ucx names UCX master's install prefix (built
// --with-cuda); by default the unpatched one of scripts/ucx-master.sh
// --cuda's cache, and the ucm rows say SKIPPED without one.
//
// Each round calls one allocation function kBatch times (kBatch live ranges
// at the end), then its free kBatch times, directly and then through the
// hook (the order alternates between rounds); a row gives the medians over
// the rounds of the time per call, and the median of each round's
// difference.  "Direct" calls the function the program's import slot held
// before the hooks were installed, "hooked" what it holds after; both go
// through the same indirect call.  The benchmark fails (status 1) if a hook
// did not register or remove a range, or the hooks did not install.
#include "hooks_bench.h"

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

namespace hooks_bench {
namespace {

constexpr int kBatch = 256;
constexpr std::size_t kSize = 4096;
// Addresses the caller supplies (cudaHostRegister, cuMemMap): below the
// fixtures' own, never touched.
constexpr std::uintptr_t kUserBase = 0x20000000;
// --live: ranges registered below everything else, 64 KiB apart.
constexpr std::uintptr_t kLiveBase = 0x01000000;
constexpr int kMaxLive = (kUserBase - kLiveBase) >> 16;

unsigned long long g_vmm = 0;  // a cuMemCreate handle

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

}  // namespace

std::uintptr_t g_ptr[kBatch];

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
    // ucm's hooks take the 32-bit entry points' out-parameters as 64-bit:
    // the upper halves are zero, so that they read what was returned.
    E(cuMemAlloc, cuMemFree,
      [](Fn f, int i) { CUdeviceptr p = 0;
                        int r = as<decltype(&cuMemAlloc)>(f)(reinterpret_cast<unsigned*>(&p), kSize); g_ptr[i] = p;
                        return r; },
      free32, true),
    E(cuMemAlloc_v2, cuMemFree_v2, DRV_PTR(cuMemAlloc_v2, (&p, kSize)), DRV_FREE(cuMemFree_v2, (p)), true),
    E(cuMemAllocPitch, cuMemFree,
      [](Fn f, int i) { CUdeviceptr p = 0, pitch = 0;
                        int r = as<decltype(&cuMemAllocPitch)>(f)(reinterpret_cast<unsigned*>(&p),
                                                                   reinterpret_cast<unsigned*>(&pitch), 1000, 4, 4);
                        g_ptr[i] = p; return r; },
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
const int kEntryCount = sizeof kEntries / sizeof kEntries[0];

double now_ns() {
    return static_cast<double>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
}

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

namespace {

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

struct Options {
    int rounds = 301, live = 0;
    bool quick = false, ucx = true;
    std::string ucx_prefix;
};

bool parse(int argc, char** argv, Options& o) {
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--quick") == 0) {
            o.rounds = 3;
            o.quick = true;
        } else if (std::strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
            o.rounds = std::max(1, std::atoi(argv[++i]));
        } else if (std::strcmp(argv[i], "--live") == 0 && i + 1 < argc) {
            o.live = std::clamp(std::atoi(argv[++i]), 0, kMaxLive);
        } else if (std::strcmp(argv[i], "--ucx") == 0 && i + 1 < argc) {
            o.ucx_prefix = argv[++i];
        } else if (std::strcmp(argv[i], "--no-ucx") == 0) {
            o.ucx = false;
        } else {
            std::fprintf(stderr, "usage: hooks_bench [--rounds N] [--live N] [--quick] [--ucx PREFIX|--no-ucx]\n");
            return false;
        }
    }
    return true;
}

struct Slots {
    Fn direct_a[64], direct_f[64], hooked_a[64], hooked_f[64];
};

// Every entry's slots are hooked; a direct call registers nothing, a hooked
// one registers and removes.
bool check_all(Slots& s) {
    bool ok = true;
    for (int k = 0; k < kEntryCount; ++k) {
        const Entry& e = kEntries[k];
        s.hooked_a[k] = read_slot(e.alloc_slot);
        s.hooked_f[k] = read_slot(e.free_slot);
        if (s.hooked_a[k] == s.direct_a[k] || s.hooked_f[k] == s.direct_f[k]) {
            std::fprintf(stderr, "hooks_bench: %s or %s is not hooked\n", e.alloc, e.free);
            ok = false;
        } else {
            e.do_alloc(s.direct_a[k], 0);
            bool leaked = registered(g_ptr[0]);
            e.do_free(s.direct_f[k], 0);
            if (leaked) std::fprintf(stderr, "hooks_bench: %s registered a range called directly\n", e.alloc);
            ok = !leaked && check(e, s.hooked_a[k], s.hooked_f[k]) && ok;
        }
    }
    return ok;
}

// The same calls as pairs: each allocation freed at once, as code that
// allocates per tensor does; ns per pair.
[[gnu::noinline]] double pair_batch(const Entry& e, Fn a, Fn f) {
    double t0 = now_ns();
    for (int i = 0; i < kBatch; ++i) {
        e.do_alloc(a, i);
        e.do_free(f, i);
    }
    return (now_ns() - t0) / kBatch;
}

// Median ns a pair of entry k adds (hooked minus direct, rounds
// interleaved, the order alternating); *plain: the direct pair's median.
double pair_added(int k, const Slots& s, int rounds, double* plain) {
    const Entry& e = kEntries[k];
    std::vector<double> added, direct;
    for (int r = -2; r < rounds; ++r) {
        double d, h;
        if (r % 2 != 0) {
            d = pair_batch(e, s.direct_a[k], s.direct_f[k]);
            h = pair_batch(e, s.hooked_a[k], s.hooked_f[k]);
        } else {
            h = pair_batch(e, s.hooked_a[k], s.hooked_f[k]);
            d = pair_batch(e, s.direct_a[k], s.direct_f[k]);
        }
        if (r < 0) continue;
        added.push_back(h - d);
        direct.push_back(d);
    }
    *plain = median(direct);
    return median(added);
}

// One entry's samples over the rounds: ldshim's process, and ucm's worker.
struct Samples {
    std::vector<double> da, df, ha, hf, xa, xf, ua, uf;
};

Samples measure(int k, const Slots& s, int rounds, UcmWorker* ucm) {
    const Entry& e = kEntries[k];
    bool with_ucm = ucm && (ucm->alloc_state(k) == 'y' || ucm->free_state(k) == 'y');
    Samples m;
    for (int r = -2; r < rounds; ++r) {  // two warm-up rounds
        const bool direct_first = r % 2 != 0;
        Times d, h, ud{}, uh{};
        auto ucm_pair = [&] { with_ucm = with_ucm && ucm->pair(k, direct_first, ud, uh); };
        if (!direct_first) ucm_pair();
        if (direct_first) {
            d = batch(e, s.direct_a[k], s.direct_f[k]);
            h = batch(e, s.hooked_a[k], s.hooked_f[k]);
        } else {
            h = batch(e, s.hooked_a[k], s.hooked_f[k]);
            d = batch(e, s.direct_a[k], s.direct_f[k]);
        }
        if (direct_first) ucm_pair();
        if (r < 0) continue;
        m.da.push_back(d.alloc);
        m.df.push_back(d.free);
        m.ha.push_back(h.alloc);
        m.hf.push_back(h.free);
        m.xa.push_back(h.alloc - d.alloc);
        m.xf.push_back(h.free - d.free);
        if (with_ucm) {
            m.ua.push_back(uh.alloc - ud.alloc);
            m.uf.push_back(uh.free - ud.free);
        }
    }
    return m;
}

void print_row(const Entry& e, const Samples& m) {
    double ma = median(m.xa), mf = median(m.xf);
    std::string label = e.registers ? e.alloc : std::string(e.alloc) + " (fails)";
    if (e.registers) {
        std::printf("%-30s %8.1f %8.1f %8.1f %6.1fx | %-20s %8.1f %8.1f %8.1f %6.1fx\n", label.c_str(), median(m.da),
                    median(m.ha), ma, median(m.ha) / median(m.da), e.free, median(m.df), median(m.hf), mf,
                    median(m.hf) / median(m.df));
    } else {
        std::printf("%-30s %8.1f %8.1f %8.1f %6.1fx\n", label.c_str(), median(m.da), median(m.ha), ma,
                    median(m.ha) / median(m.da));
    }
}

// "ldshim  ucm  ratio" for one call, or ucm's "-" where it does not hook it.
std::string versus(const std::vector<double>& ldshim, const std::vector<double>& ucm, char state,
                   std::vector<double>& ratios) {
    char cell[64];
    if (state != 'y' || ucm.empty()) {
        const char* why = state == '-' ? "-" : "not timed";
        std::snprintf(cell, sizeof cell, "%8.1f %8s %10s", median(ldshim), why, "-");
    } else {
        double l = median(ldshim), u = median(ucm);
        std::snprintf(cell, sizeof cell, "%8.1f %8.1f %9.2fx", l, u, l / u);
        ratios.push_back(l / u);
    }
    return cell;
}

void print_ucm(const std::vector<Samples>& all, const UcmWorker& ucm) {
    if (!ucm.failure().empty()) {
        std::printf("\nucm's CUDA hooks: FAILED: %s\n", ucm.failure().c_str());
        return;
    }
    std::printf(
        "\nucm's CUDA hooks (%s) with UCS's memtype cache subscribed, in a worker process, in the same rounds: "
        "ns added per call (medians of each round's difference; -: ucm does not hook it)\n",
        ucm.label().c_str());
    std::printf("%-30s %8s %8s %10s | %-20s %8s %8s %10s\n", "allocation", "ldshim", "ucm", "ldshim/ucm", "free",
                "ldshim", "ucm", "ldshim/ucm");
    std::vector<double> ra, rf;
    for (int k = 0; k < kEntryCount; ++k) {
        const Entry& e = kEntries[k];
        std::string a = versus(all[k].xa, all[k].ua, ucm.alloc_state(k), ra);
        std::string label = e.registers ? e.alloc : std::string(e.alloc) + " (fails)";
        if (!e.registers) {
            std::printf("%-30s %s\n", label.c_str(), a.c_str());
            continue;
        }
        std::string f = versus(all[k].xf, all[k].uf, ucm.free_state(k), rf);
        std::printf("%-30s %s | %-20s %s\n", label.c_str(), a.c_str(), e.free, f.c_str());
    }
    if (!ra.empty() && !rf.empty())
        std::printf("ldshim/ucm, median over the calls both hook: allocation %.2fx (%zu), free %.2fx (%zu)\n",
                    median(ra), ra.size(), median(rf), rf.size());
}

// The ucm worker, forked before ldshim's hooks go in; null (said) without one.
std::unique_ptr<UcmWorker> start_ucm(const Options& o, const Slots& s) {
    std::string why;
    std::unique_ptr<UcmWorker> ucm;
    if (!o.ucx) {
        why = "--no-ucx";
    } else if (std::string prefix = find_ucx(o.ucx_prefix, why); !prefix.empty()) {
        ucm = UcmWorker::start(prefix, s.direct_a, s.direct_f, why);
    }
    if (!ucm) std::printf("ucm's CUDA hooks: SKIPPED: %s\n", why.c_str());
    return ucm;
}

void print_entries(const Options& o, const Slots& s, UcmWorker* ucm) {
    std::printf(
        "%d rounds of %d calls, %d other ranges registered; medians of ns per call, and of each round's "
        "difference\n",
        o.rounds, kBatch, o.live);
    std::printf("%-30s %8s %8s %8s %7s | %-20s %8s %8s %8s %7s\n", "allocation", "direct", "hooked", "added", "ratio",
                "free", "direct", "hooked", "added", "ratio");
    double worst = 0, pair_async = 0;
    int async_k = 0;
    std::vector<Samples> all;
    for (int k = 0; k < kEntryCount; ++k) {
        const Entry& e = kEntries[k];
        all.push_back(measure(k, s, o.rounds, ucm));
        const Samples& m = all.back();
        print_row(e, m);
        if (e.registers) worst = std::max({worst, median(m.xa), median(m.xf)});
        if (std::strcmp(e.alloc, "cudaMallocAsync") == 0) {
            pair_async = median(m.xa) + median(m.xf);
            async_k = k;
        }
    }
    std::printf("\nmost added by one hooked call: %.1f ns (goal: at most 20)\n", worst);
    std::printf(
        "cudaMallocAsync + cudaFreeAsync, %d allocations then their frees in order: %.1f ns added per pair; "
        "%.1f %% of a 645 ns GPU pair\n",
        kBatch, pair_async, 100 * pair_async / 645);
    double plain = 0, added = pair_added(async_k, s, o.rounds, &plain);
    std::printf(
        "cudaMallocAsync + cudaFreeAsync, each freed at once: %.1f ns added per pair (direct %.1f); %.1f %% of "
        "a 645 ns GPU pair (goal: at most 30 ns here, 10 %% on a GPU)\n",
        added, plain, 100 * added / 645);
    if (ucm) print_ucm(all, *ucm);
}

}  // namespace
}  // namespace hooks_bench

int main(int argc, char** argv) {
    using namespace hooks_bench;
    Options o;
    if (!parse(argc, argv, o)) return 2;
    for (int i = 0; i < o.live; ++i)
        ldshim_memtype_insert(vp(kLiveBase + (std::uintptr_t(i) << 16)), kSize, LDSHIM_MEM_CUDA, 0);
    static_assert(sizeof kEntries / sizeof kEntries[0] <= 64);
    Slots s;
    for (int k = 0; k < kEntryCount; ++k) {
        s.direct_a[k] = read_slot(kEntries[k].alloc_slot);
        s.direct_f[k] = read_slot(kEntries[k].free_slot);
    }
    std::fflush(stdout);
    std::unique_ptr<UcmWorker> ucm = start_ucm(o, s);
    if (int rc = ldshim_hooks_install(LDSHIM_HOOK_CUDA); rc != LDSHIM_OK) {
        std::fprintf(stderr, "hooks_bench: ldshim_hooks_install: %s\n", ldshim_strerror(rc));
        return 1;
    }
    MemProp prop{};
    prop.type = 1;
    prop.location.type = 1;
    cuMemCreate(&g_vmm, kSize, &prop, 0);
    if (!check_all(s)) return 1;
    print_entries(o, s, ucm.get());
    ucm.reset();
    thread_rows(s.direct_a[0], s.direct_f[0], s.hooked_a[0], s.hooked_f[0], o.quick ? 1 : 21, o.quick);
    return 0;
}
