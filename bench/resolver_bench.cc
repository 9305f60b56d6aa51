// ldshim_dlopen_from against glibc's dlopen (called from the same object)
// and against the approach of UCX 1.13's ucm_dlopen, re-implemented here as
// the baseline: dladdr of the caller, dlopen of the caller's file, dlinfo
// RTLD_DI_SERINFO, then stat of each candidate.
//   (a) an already-loaded library, by its SONAME
//   (b) a library found in the third RPATH directory (loaded and unloaded)
// The fixture libraries are compiled at start-up into a temporary directory.
//   build/bench/resolver_bench            (Google Benchmark)
//   build/bench/resolver_bench --loop=glibc|ldshim N   (N rounds of (b), for strace -c)
#include "ldshim.h"

#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <link.h>
#include <sys/stat.h>

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

void build_fixture() {
    char tmpl[] = "/tmp/ldshim-rbench-XXXXXX";
    if (!mkdtemp(tmpl)) std::abort();
    g_dir = tmpl;
    std::string d = g_dir;
    std::FILE* f = std::fopen((d + "/lib.c").c_str(), "w");
    std::fputs("int fixture_id(void) { return 1; }\n", f);
    std::fclose(f);
    f = std::fopen((d + "/caller.c").c_str(), "w");
    std::fputs("#include <dlfcn.h>\nvoid *caller_dlopen(const char *n, int m) { void *h = dlopen(n, m);"
               " __asm__ volatile(\"\" ::: \"memory\"); return h; }\n",
               f);
    std::fclose(f);
    bool ok = sh("mkdir -p " + d + "/d1 " + d + "/d2 " + d + "/d3") &&
              sh("cc -shared -fPIC -o " + d + "/d3/libtarget.so " + d + "/lib.c -Wl,-soname,libtarget.so.1") &&
              sh("cc -shared -fPIC -o " + d + "/d3/libfar.so " + d + "/lib.c") &&
              sh("cc -shared -fPIC -o " + d + "/libcaller.so " + d + "/caller.c -ldl -Wl,--disable-new-dtags -Wl,-rpath," +
                 d + "/d1:" + d + "/d2:" + d + "/d3");
    if (!ok) {
        std::fprintf(stderr, "resolver_bench: cannot build the fixture in %s\n", d.c_str());
        std::exit(1);
    }
    void* h = dlopen((d + "/libcaller.so").c_str(), RTLD_NOW);
    g_caller_dlopen = reinterpret_cast<void* (*)(const char*, int)>(dlsym(h, "caller_dlopen"));
    g_caller_addr = reinterpret_cast<const void*>(g_caller_dlopen);
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
BENCHMARK(BM_loaded_glibc)->Name("a_loaded_by_soname/glibc");
BENCHMARK(BM_loaded_ldshim)->Name("a_loaded_by_soname/ldshim");
BENCHMARK(BM_loaded_ucx)->Name("a_loaded_by_soname/ucx_1.13_style");
BENCHMARK(BM_third_rpath_glibc)->Name("b_third_rpath_dir/glibc");
BENCHMARK(BM_third_rpath_ldshim)->Name("b_third_rpath_dir/ldshim");
BENCHMARK(BM_third_rpath_ucx)->Name("b_third_rpath_dir/ucx_1.13_style");

}  // namespace

int main(int argc, char** argv) {
    build_fixture();
    int rc = 0;
    if (argc == 3 && std::strncmp(argv[1], "--loop=", 7) == 0) {
        bool via = std::strcmp(argv[1] + 7, "ldshim") == 0;
        // Warm the model (and the loader-configuration cache) before counting.
        dlclose(ldshim_dlopen_from(g_caller_addr, "libfar.so", RTLD_NOW));
        std::printf("ready\n");
        std::fflush(stdout);
        for (long i = 0, n = std::atol(argv[2]); i < n; ++i) {
            void* h = via ? ldshim_dlopen_from(g_caller_addr, "libfar.so", RTLD_NOW) : g_caller_dlopen("libfar.so", RTLD_NOW);
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
