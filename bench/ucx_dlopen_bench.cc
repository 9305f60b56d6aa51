// An already-loaded dlopen (by SONAME) made through the program's own dlopen
// import slot, in one run, in five fresh processes:
//   glibc                    no ucm: the slot holds libc's dlopen
//   unpatched ucm            Debian's libucm 1.13.1 in reloc mode (UCX defaults)
//   unpatched ucm, RPATH=n   the same with UCX_MEM_DLOPEN_PROCESS_RPATH=n
//   patched ucm + ldshim     contrib/ucx/'s libucm (scripts/ucx-patched.sh) + libldshim.so.0
//   patched ucm, no ldshim   the same libucm without libldshim (its fallback)
// ucm is switched on as on tests/repro's no-MPI route: libucs + libucm loaded,
// VM_MAPPED|VM_UNMAPPED handlers asked for with UCX_MEM_MMAP_HOOK_MODE=reloc.
// Each process times batches of dlopen("libm.so.6") (closed after each batch,
// untimed) and reports the median per call; the parent prints the table and
// the ratios.  Built with -fno-plt, so that the one GOT slot the calls go
// through can be read back to show whose dlopen it holds.
//   build/bench/ucx_dlopen_bench [--batches N] [--calls N] [--prefix DIR]
// DIR: the patched prefix (default: the last line of scripts/ucx-patched.sh).
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#ifndef UCX_PATCHED_SCRIPT
#error "UCX_PATCHED_SCRIPT must name scripts/ucx-patched.sh"
#endif
#ifndef LDSHIM_LIB_DIR
#error "LDSHIM_LIB_DIR must name the directory of libldshim.so.0"
#endif

namespace {

constexpr const char* kTarget = "libm.so.6";  // loaded at startup (libstdc++ needs it)

std::string object_of(const void* p) {
    Dl_info info;
    if (!p || !dladdr(p, &info) || !info.dli_fname) return "?";
    return info.dli_fname;
}

// The child: switch ucm on (unless told not to), then time the dlopens.
int child(bool with_ucm, int batches, int calls) {
    if (with_ucm) {
        void* ucs = dlopen("libucs.so.0", RTLD_NOW | RTLD_GLOBAL);
        void* ucm = dlopen("libucm.so.0", RTLD_NOW | RTLD_GLOBAL);
        using set_fn = int (*)(int, int, void (*)(int, void*, void*), void*);
        auto set = ucm ? reinterpret_cast<set_fn>(dlsym(ucm, "ucm_set_event_handler")) : nullptr;
        if (!ucs || !set) {
            std::printf("ERROR UCX unavailable: %s\n", dlerror());
            return 2;
        }
        set((1 << 16) | (1 << 17), 0, [](int, void*, void*) {}, nullptr);  // errs here, but the hooks are in
    }
    void* (*volatile slot)(const char*, int) = dlopen;  // the GOT slot every call below goes through
    std::vector<void*> handles(static_cast<std::size_t>(calls));
    std::vector<double> per_call;
    for (int b = 0; b < batches + 1; ++b) {
        auto t0 = std::chrono::steady_clock::now();
        for (auto& h : handles) h = dlopen(kTarget, RTLD_NOW);
        auto t1 = std::chrono::steady_clock::now();
        for (auto* h : handles) {
            if (!h) {
                std::printf("ERROR dlopen(%s): %s\n", kTarget, dlerror());
                return 2;
            }
            dlclose(h);
        }
        if (b > 0) per_call.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / calls);
    }
    std::sort(per_call.begin(), per_call.end());
    void* ldshim = dlopen("libldshim.so.0", RTLD_NOW | RTLD_NOLOAD);
    void* ucm = dlopen("libucm.so.0", RTLD_NOW | RTLD_NOLOAD);
    std::printf("RESULT %.1f %s %s %s\n", per_call[per_call.size() / 2],
                object_of(reinterpret_cast<void*>(slot)).c_str(),
                ucm ? object_of(dlsym(ucm, "ucm_dlopen")).c_str() : "-", ldshim ? "ldshim-loaded" : "no-ldshim");
    return 0;
}

struct Mode {
    std::string name;
    bool with_ucm;
    std::vector<std::string> env;
};

struct Result {
    double ns = 0;
    std::string slot, libucm, ldshim, error;
};

Result run_child(const char* self, const Mode& m, int batches, int calls) {
    std::string cmd = "env -u LD_PRELOAD -u LD_LIBRARY_PATH UCX_MEM_MMAP_HOOK_MODE=reloc UCX_MEM_MALLOC_RELOC=n";
    for (const auto& e : m.env) cmd += " '" + e + "'";
    cmd += std::string(" '") + self + "' --child " + (m.with_ucm ? "ucm" : "none") + " " + std::to_string(batches) +
           " " + std::to_string(calls) + " 2>&1";
    Result r;
    std::unique_ptr<FILE, int (*)(FILE*)> f(popen(cmd.c_str(), "r"), pclose);
    std::array<char, 4096> buf{};
    std::string out;
    while (f && fgets(buf.data(), buf.size(), f.get())) out += buf.data();
    auto pos = out.find("RESULT ");
    if (pos == std::string::npos) {
        r.error = out.empty() ? "(no output)" : out;
        return r;
    }
    std::array<char, 1024> slot{}, ucm{}, ld{};
    if (std::sscanf(out.c_str() + pos, "RESULT %lf %1023s %1023s %1023s", &r.ns, slot.data(), ucm.data(), ld.data()) !=
        4)
        r.error = out;
    r.slot = slot.data();
    r.libucm = ucm.data();
    r.ldshim = ld.data();
    return r;
}

std::string patched_prefix() {
    std::unique_ptr<FILE, int (*)(FILE*)> f(popen(UCX_PATCHED_SCRIPT, "r"), pclose);
    std::array<char, 4096> buf{};
    std::string last;
    while (f && fgets(buf.data(), buf.size(), f.get())) last = buf.data();
    while (!last.empty() && last.back() == '\n') last.pop_back();
    return last;
}

std::string base(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

}  // namespace

int main(int argc, char** argv) {
    int batches = 15, calls = 2000;
    std::string prefix;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--child" && i + 3 < argc)
            return child(std::strcmp(argv[i + 1], "ucm") == 0, std::atoi(argv[i + 2]), std::atoi(argv[i + 3]));
        if (a == "--batches" && i + 1 < argc)
            batches = std::max(1, std::atoi(argv[++i]));
        else if (a == "--calls" && i + 1 < argc)
            calls = std::max(1, std::atoi(argv[++i]));
        else if (a == "--prefix" && i + 1 < argc)
            prefix = argv[++i];
        else {
            std::fprintf(stderr, "usage: %s [--batches N] [--calls N] [--prefix DIR]\n", argv[0]);
            return 2;
        }
    }
    if (prefix.empty()) prefix = patched_prefix();
    if (prefix.empty() || prefix[0] != '/') {
        std::fprintf(stderr, "SKIPPED: no patched libucm (scripts/ucx-patched.sh failed; see its output)\n");
        return 77;
    }
    const std::string patched = "LD_LIBRARY_PATH=" + prefix + "/lib";
    const std::vector<Mode> modes = {
        {"glibc (no ucm)", false, {}},
        {"unpatched ucm 1.13.1", true, {}},
        {"unpatched ucm, PROCESS_RPATH=n", true, {"UCX_MEM_DLOPEN_PROCESS_RPATH=n"}},
        {"patched ucm + ldshim", true, {patched + ":" LDSHIM_LIB_DIR}},
        {"patched ucm, no ldshim", true, {patched}},
    };
    std::printf(
        "dlopen(\"%s\") of an already-loaded library through the program's dlopen slot;\n"
        "median of %d batches of %d calls, ns per call\n\n",
        kTarget, batches, calls);
    std::printf("| mode | ns/call | × glibc | dlopen slot holds | libucm | libldshim |\n|---|---|---|---|---|---|\n");
    std::vector<Result> results;
    int status = 0;
    for (const auto& m : modes) {
        results.push_back(run_child(argv[0], m, batches, calls));
        const Result& r = results.back();
        if (!r.error.empty()) {
            std::printf("| %s | ERROR: %s |\n", m.name.c_str(), r.error.c_str());
            status = 1;
            continue;
        }
        std::printf("| %s | %.0f | %.1f× | %s | %s | %s |\n", m.name.c_str(), r.ns, r.ns / results[0].ns,
                    base(r.slot).c_str(),
                    r.libucm.starts_with(prefix + "/") ? "patched (private prefix)" : r.libucm.c_str(),
                    r.ldshim == "ldshim-loaded" ? "loaded" : "-");
    }
    if (status == 0)
        std::printf(
            "\npatched ucm + ldshim vs unpatched ucm (defaults): %.2f× the time (%.1f× faster)\n"
            "patched ucm + ldshim vs glibc: %.1f×;  unpatched ucm vs glibc: %.1f×\n",
            results[3].ns / results[1].ns, results[1].ns / results[3].ns, results[3].ns / results[0].ns,
            results[1].ns / results[0].ns);
    return status;
}
