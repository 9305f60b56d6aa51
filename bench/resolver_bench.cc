// ldshim_dlopen_from against glibc's dlopen (called from the same object)
// and against the approach of UCX 1.13's ucm_dlopen, re-implemented here as
// the baseline: dladdr of the caller, dlopen of the caller's file, dlinfo
// RTLD_DI_SERINFO, then stat of each candidate.
//   (a) an already-loaded library, by its SONAME
//   (b) a library found in the third RPATH directory (loaded and unloaded)
// The fixture libraries are compiled at start-up into a temporary directory.
//   build/bench/resolver_bench            (Google Benchmark)
//   build/bench/resolver_bench --loop=glibc|ldshim N [OTHERS]   (N rounds of (b), for strace -c and
//   perf stat; with OTHERS libraries loaded first, as in (c))
//   build/bench/resolver_bench --plain [ROUNDS]
//       (a) as a plain program meets it: ldshim_dlopen_from(&main,
//       "libm.so.6") + dlclose against glibc's dlopen + dlclose from main,
//       interleaved blocks, the fastest block of each; prints the ratio.
//   build/bench/resolver_bench --new [ROUNDS]
//       a new library by a name that is not its SONAME (d3/libnew.so,
//       SONAME libnew.so.1, asked as "libnew.so"; loaded and unloaded):
//       ldshim_dlopen_from against glibc's dlopen from libcaller,
//       interleaved blocks, the fastest block of each; prints the ratio.
//   build/bench/resolver_bench --front [ROUNDS]
//       (a) through ldshim's front entry in libcaller's dlopen slot, with an
//       interposer that forwards by dlsym(RTLD_NEXT) behind it (the process
//       re-runs itself with that interposer in LD_PRELOAD), against
//       ldshim_dlopen_from and glibc in the same process; prints the ratios.
#include "ldshim.h"

#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <link.h>
#include <sys/stat.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

std::string g_dir;
void* (*g_caller_dlopen)(const char*, int) = nullptr;  // dlopen called from inside libcaller.so
const void* g_caller_addr = nullptr;

bool sh(const std::string& cmd) { return std::system(cmd.c_str()) == 0; }
void load_fixture();

void build_fixture() {
    char tmpl[] = "/tmp/ldshim-rbench-XXXXXX";
    if (!mkdtemp(tmpl)) std::abort();
    g_dir = tmpl;
    std::string d = g_dir;
    std::FILE* f = std::fopen((d + "/lib.c").c_str(), "w");
    std::fputs("int fixture_id(void) { return 1; }\n", f);
    std::fclose(f);
    f = std::fopen((d + "/caller.c").c_str(), "w");
    std::fputs(
        "#include <dlfcn.h>\nvoid *caller_dlopen(const char *n, int m) { void *h = dlopen(n, m);"
        " __asm__ volatile(\"\" ::: \"memory\"); return h; }\n",
        f);
    std::fclose(f);
    // An interposer of the commonest kind: defines dlopen, forwards by RTLD_NEXT.
    f = std::fopen((d + "/forwarder.c").c_str(), "w");
    std::fputs(
        "#define _GNU_SOURCE\n#include <dlfcn.h>\nvoid *dlopen(const char *n, int m) {\n"
        "  void *(*next)(const char *, int) = (void *(*)(const char *, int))dlsym(RTLD_NEXT, \"dlopen\");\n"
        "  void *h = next(n, m); __asm__ volatile(\"\" ::: \"memory\"); return h; }\n",
        f);
    std::fclose(f);
    bool ok = sh("mkdir -p " + d + "/d1 " + d + "/d2 " + d + "/d3") &&
              sh("cc -O2 -shared -fPIC -o " + d + "/libforwarder.so " + d + "/forwarder.c -ldl") &&
              sh("cc -shared -fPIC -o " + d + "/d3/libtarget.so " + d + "/lib.c -Wl,-soname,libtarget.so.1") &&
              sh("cc -shared -fPIC -o " + d + "/d3/libfar.so " + d + "/lib.c") &&
              sh("cc -shared -fPIC -o " + d + "/d3/libnew.so " + d + "/lib.c -Wl,-soname,libnew.so.1") &&
              sh("cc -shared -fPIC -o " + d + "/libcaller.so " + d +
                 "/caller.c -ldl -Wl,--disable-new-dtags -Wl,-rpath," + d + "/d1:" + d + "/d2:" + d + "/d3");
    if (!ok) {
        std::fprintf(stderr, "resolver_bench: cannot build the fixture in %s\n", d.c_str());
        std::exit(1);
    }
    load_fixture();
}

void load_fixture() {
    void* h = dlopen((g_dir + "/libcaller.so").c_str(), RTLD_NOW);
    if (!h) {
        std::fprintf(stderr, "resolver_bench: %s\n", dlerror());
        std::exit(1);
    }
    g_caller_dlopen = reinterpret_cast<void* (*)(const char*, int)>(dlsym(h, "caller_dlopen"));
    g_caller_addr = reinterpret_cast<const void*>(g_caller_dlopen);
    // Behind the interposer (--front), libcaller's own call needs ldshim in front.
    if (std::getenv("LDSHIM_BENCH_DIR") && ldshim_hooks_install(LDSHIM_HOOK_DLOPEN) != LDSHIM_OK) std::abort();
    // (a): libtarget is loaded once and stays loaded.
    if (!g_caller_dlopen("libtarget.so", RTLD_NOW)) std::abort();
}

// UCX 1.13's ucm_dlopen search, as documented in ../shared/reference/ucx-ucm.md.
void* ucx_style_dlopen(const void* caller, const char* name, int mode) {
    Dl_info info;
    if (!dladdr(caller, &info) || !info.dli_fname) return dlopen(name, mode);
    void* self = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    if (!self) return dlopen(name, mode);
    Dl_serinfo size;
    void* result = nullptr;
    if (dlinfo(self, RTLD_DI_SERINFOSIZE, &size) == 0) {
        std::vector<char> buf(size.dls_size);
        auto* si = reinterpret_cast<Dl_serinfo*>(buf.data());
        dlinfo(self, RTLD_DI_SERINFOSIZE, si);
        if (dlinfo(self, RTLD_DI_SERINFO, si) == 0) {
            for (unsigned i = 0; i < si->dls_cnt && !result; ++i) {
                std::string path = std::string(si->dls_serpath[i].dls_name) + "/" + name;
                struct stat st;
                if (stat(path.c_str(), &st) == 0) result = dlopen(path.c_str(), mode);
            }
        }
    }
    dlclose(self);
    return result ? result : dlopen(name, mode);
}

void BM_loaded_glibc(benchmark::State& st) {
    for (auto _ : st) {
        void* h = g_caller_dlopen("libtarget.so.1", RTLD_NOW);
        benchmark::DoNotOptimize(h);
        dlclose(h);
    }
}
void BM_loaded_ldshim(benchmark::State& st) {
    for (auto _ : st) {
        void* h = ldshim_dlopen_from(g_caller_addr, "libtarget.so.1", RTLD_NOW);
        benchmark::DoNotOptimize(h);
        dlclose(h);
    }
}
void BM_loaded_ucx(benchmark::State& st) {
    for (auto _ : st) {
        void* h = ucx_style_dlopen(g_caller_addr, "libtarget.so.1", RTLD_NOW);
        benchmark::DoNotOptimize(h);
        dlclose(h);
    }
}
void BM_third_rpath_glibc(benchmark::State& st) {
    for (auto _ : st) {
        void* h = g_caller_dlopen("libfar.so", RTLD_NOW);
        if (!h) st.SkipWithError("not found");
        dlclose(h);
    }
}
void BM_third_rpath_ldshim(benchmark::State& st) {
    for (auto _ : st) {
        void* h = ldshim_dlopen_from(g_caller_addr, "libfar.so", RTLD_NOW);
        if (!h) st.SkipWithError("not found");
        dlclose(h);
    }
}
void BM_third_rpath_ucx(benchmark::State& st) {
    for (auto _ : st) {
        void* h = ucx_style_dlopen(g_caller_addr, "libfar.so", RTLD_NOW);
        if (!h) st.SkipWithError("not found");
        dlclose(h);
    }
}
// (a) from the main program (ldshim told so by an address in it), by a name
// the program's own dependency has
// (libm.so.6, which libstdc++ needs): what a plain program meets.
const void* in_program();
void BM_main_glibc(benchmark::State& st) {
    for (auto _ : st) {
        void* h = dlopen("libm.so.6", RTLD_NOW);
        benchmark::DoNotOptimize(h);
        dlclose(h);
    }
}
void BM_main_ldshim(benchmark::State& st) {
    for (auto _ : st) {
        void* h = ldshim_dlopen_from(in_program(), "libm.so.6", RTLD_NOW);
        benchmark::DoNotOptimize(h);
        dlclose(h);
    }
}
const void* in_program() { return reinterpret_cast<const void*>(&BM_main_glibc); }
BENCHMARK(BM_loaded_glibc)->Name("a_loaded_by_soname/glibc");
BENCHMARK(BM_loaded_ldshim)->Name("a_loaded_by_soname/ldshim");
BENCHMARK(BM_loaded_ucx)->Name("a_loaded_by_soname/ucx_1.13_style");
BENCHMARK(BM_main_glibc)->Name("a_loaded_from_main/glibc");
BENCHMARK(BM_main_ldshim)->Name("a_loaded_from_main/ldshim");
// The same with 4 threads at once: the fast path takes no lock, so the
// ratio per call must hold (time is per thread: compare rows, not to 1 thread).
BENCHMARK(BM_loaded_glibc)->Name("a_loaded_by_soname_4_threads/glibc")->Threads(4)->UseRealTime();
BENCHMARK(BM_loaded_ldshim)->Name("a_loaded_by_soname_4_threads/ldshim")->Threads(4)->UseRealTime();
BENCHMARK(BM_loaded_ucx)->Name("a_loaded_by_soname_4_threads/ucx_1.13_style")->Threads(4)->UseRealTime();
BENCHMARK(BM_third_rpath_glibc)->Name("b_third_rpath_dir/glibc");
BENCHMARK(BM_third_rpath_ldshim)->Name("b_third_rpath_dir/ldshim");
BENCHMARK(BM_third_rpath_ucx)->Name("b_third_rpath_dir/ucx_1.13_style");

// (c) (b) with N other libraries loaded (copies of one file under N names,
// kept loaded for the rest of the run): ldshim's cost must not grow with N.
std::vector<void*> g_others;
void load_others(std::size_t n) {
    for (std::size_t i = g_others.size(); i < n; ++i) {
        std::string p = g_dir + "/others/libother" + std::to_string(i) + ".so";
        if (!sh("mkdir -p " + g_dir + "/others && cp " + g_dir + "/d3/libfar.so " + p)) std::abort();
        void* h = dlopen(p.c_str(), RTLD_NOW);
        if (!h) std::abort();
        g_others.push_back(h);
    }
}
void BM_n_loaded_glibc(benchmark::State& st) {
    load_others(static_cast<std::size_t>(st.range(0)));
    BM_third_rpath_glibc(st);
}
void BM_n_loaded_ldshim(benchmark::State& st) {
    load_others(static_cast<std::size_t>(st.range(0)));
    BM_third_rpath_ldshim(st);
}
BENCHMARK(BM_n_loaded_glibc)->Name("c_n_loaded/glibc")->Arg(1);
BENCHMARK(BM_n_loaded_ldshim)->Name("c_n_loaded/ldshim")->Arg(1);
BENCHMARK(BM_n_loaded_glibc)->Name("c_n_loaded/glibc")->Arg(100);
BENCHMARK(BM_n_loaded_ldshim)->Name("c_n_loaded/ldshim")->Arg(100);
BENCHMARK(BM_n_loaded_glibc)->Name("c_n_loaded/glibc")->Arg(500);
BENCHMARK(BM_n_loaded_ldshim)->Name("c_n_loaded/ldshim")->Arg(500);

}  // namespace

// Median of `rounds` timed blocks of `n` calls each, in ns per call.
template <class F>
double median_ns(F&& call, int rounds, int n) {
    std::vector<double> per;
    for (int r = 0; r < rounds; ++r) {
        auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < n; ++i) call();
        std::chrono::duration<double, std::nano> dt = std::chrono::steady_clock::now() - t0;
        per.push_back(dt.count() / n);
    }
    std::sort(per.begin(), per.end());
    return per[per.size() / 2];
}

// (a) from the main program, both sides in short interleaved blocks so that
// they share the machine's state; the fastest block of each, since on a busy
// machine every slower one carries someone else's time.
int plain_program(int rounds) {
    const int n = 2000;
    double glibc = 1e30, ldshim = 1e30;
    for (int r = 0; r < rounds; ++r) {
        glibc = std::min(glibc, median_ns([] { dlclose(dlopen("libm.so.6", RTLD_NOW)); }, 1, n));
        ldshim =
            std::min(ldshim, median_ns([] { dlclose(ldshim_dlopen_from(in_program(), "libm.so.6", RTLD_NOW)); }, 1, n));
    }
    std::printf("a_loaded_from_main (libm.so.6), fastest of %d x %d calls (dlopen + dlclose)\n", rounds, n);
    std::printf("  glibc dlopen          %6.1f ns\n", glibc);
    std::printf("  ldshim_dlopen_from    %6.1f ns  ldshim adds %4.1f ns (%.2fx)\n", ldshim, ldshim - glibc,
                ldshim / glibc);
    return 0;
}

// A new library by a name that is not its SONAME, so that glibc must be
// taught the name (ldshim calls glibc as the caller with it), from
// libcaller both ways, interleaved as in plain_program.
int new_library(int rounds) {
    const int n = 200;
    double glibc = 1e30, ldshim = 1e30;
    for (int r = 0; r < rounds; ++r) {
        glibc = std::min(glibc, median_ns([] { dlclose(g_caller_dlopen("libnew.so", RTLD_NOW)); }, 1, n));
        ldshim = std::min(ldshim,
                          median_ns([] { dlclose(ldshim_dlopen_from(g_caller_addr, "libnew.so", RTLD_NOW)); }, 1, n));
    }
    std::printf(
        "d_new_by_other_name (libnew.so, SONAME libnew.so.1, third RPATH directory), fastest of %d x %d "
        "calls (dlopen + dlclose)\n",
        rounds, n);
    std::printf("  glibc dlopen          %8.0f ns\n", glibc);
    std::printf("  ldshim_dlopen_from    %8.0f ns  ldshim adds %6.0f ns (%.2fx)\n", ldshim, ldshim - glibc,
                ldshim / glibc);
    return 0;
}

// (a) three ways in one process, interleaved so that they share the machine's
// state: glibc from libcaller, ldshim_dlopen_from, and libcaller's own call
// through its slot (ldshim's front entry, then the interposer, then glibc).
int front_entry(int rounds) {
    if (!std::getenv("LD_PRELOAD")) {
        // Re-run with the interposer first in symbol order, as a tool puts it.
        std::string self = "/proc/self/exe";
        setenv("LD_PRELOAD", (g_dir + "/libforwarder.so").c_str(), 1);
        std::string r = std::to_string(rounds);
        execl(self.c_str(), "resolver_bench", "--front", r.c_str(), static_cast<char*>(nullptr));
        std::perror("resolver_bench: exec");
        return 1;
    }
    // glibc's own dlopen (libc's handle), and the interposer's (first in scope).
    using dlopen_fn = void* (*)(const char*, int);
    void* libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
    auto glibc = reinterpret_cast<dlopen_fn>(libc ? dlsym(libc, "dlopen") : nullptr);
    auto interposer = reinterpret_cast<dlopen_fn>(dlsym(RTLD_DEFAULT, "dlopen"));
    if (!glibc || !interposer || glibc == interposer || !(ldshim_hooks_active() & LDSHIM_PATH_DLOPEN)) {
        std::fprintf(stderr, "resolver_bench: the interposer or the front entry is not in place\n");
        return 1;
    }
    const int n = 20000;
    std::vector<double> f, v, p, i;
    for (int r = 0; r < rounds; ++r) {
        f.push_back(median_ns([] { dlclose(g_caller_dlopen("libtarget.so.1", RTLD_NOW)); }, 1, n));
        v.push_back(median_ns([] { dlclose(ldshim_dlopen_from(g_caller_addr, "libtarget.so.1", RTLD_NOW)); }, 1, n));
        p.push_back(median_ns([&] { dlclose(glibc("libtarget.so.1", RTLD_NOW)); }, 1, n));
        i.push_back(median_ns([&] { dlclose(interposer("libtarget.so.1", RTLD_NOW)); }, 1, n));
    }
    auto med = [](std::vector<double>& x) {
        std::sort(x.begin(), x.end());
        return x[x.size() / 2];
    };
    double front = med(f), via = med(v), plain = med(p), alone = med(i);
    std::printf("a_loaded_by_soname, median of %d x %d calls (dlopen + dlclose)\n", rounds, n);
    std::printf("  glibc dlopen                                  %7.0f ns\n", plain);
    std::printf("  the interposer alone (RTLD_NEXT to glibc)     %7.0f ns\n", alone);
    std::printf("  ldshim_dlopen_from, no interposer             %7.0f ns  ldshim adds %4.0f ns\n", via, via - plain);
    std::printf(
        "  front entry, the interposer behind it         %7.0f ns  ldshim adds %4.0f ns (%.2fx the line above)\n",
        front, front - alone, (front - alone) / (via - plain));
    return 0;
}

int main(int argc, char** argv) {
    if (argc >= 2 && std::strcmp(argv[1], "--front") == 0 && std::getenv("LD_PRELOAD")) {
        // The re-run: the fixture directory is passed on through the environment.
        g_dir = std::getenv("LDSHIM_BENCH_DIR") ? std::getenv("LDSHIM_BENCH_DIR") : "";
    }
    if (g_dir.empty())
        build_fixture();
    else
        load_fixture();
    int rc = 0;
    if (argc >= 2 && std::strcmp(argv[1], "--plain") == 0) {
        rc = plain_program(argc >= 3 ? std::atoi(argv[2]) : 2000);
    } else if (argc >= 2 && std::strcmp(argv[1], "--new") == 0) {
        dlclose(ldshim_dlopen_from(g_caller_addr, "libnew.so", RTLD_NOW));  // the model built first
        rc = new_library(argc >= 3 ? std::atoi(argv[2]) : 50);
    } else if (argc >= 2 && std::strcmp(argv[1], "--front") == 0) {
        setenv("LDSHIM_BENCH_DIR", g_dir.c_str(), 1);
        rc = front_entry(argc >= 3 ? std::atoi(argv[2]) : 15);
    } else if ((argc == 3 || argc == 4) && std::strncmp(argv[1], "--loop=", 7) == 0) {
        bool via = std::strcmp(argv[1] + 7, "ldshim") == 0;
        if (argc == 4) load_others(static_cast<std::size_t>(std::atol(argv[3])));
        // Warm the model (and the loader-configuration cache) before counting.
        dlclose(ldshim_dlopen_from(g_caller_addr, "libfar.so", RTLD_NOW));
        std::printf("ready\n");
        std::fflush(stdout);
        for (long i = 0, n = std::atol(argv[2]); i < n; ++i) {
            void* h =
                via ? ldshim_dlopen_from(g_caller_addr, "libfar.so", RTLD_NOW) : g_caller_dlopen("libfar.so", RTLD_NOW);
            if (!h) rc = 1;
            dlclose(h);
        }
    } else {
        benchmark::Initialize(&argc, argv);
        benchmark::RunSpecifiedBenchmarks();
        benchmark::Shutdown();
    }
    sh("rm -rf " + g_dir);
    return rc;
}
