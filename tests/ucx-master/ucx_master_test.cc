// UCX master with and without the series of contrib/ucx/master (built, cached,
// by scripts/ucx-master.sh; this suite never builds it), on the fifteen
// Julia-shaped layouts of tests/repro/julia_report.cc, through the "ucm" route
// of julia_mpi.c: libjulia dlopens master's libucs and libucm (found through
// LD_LIBRARY_PATH) and asks ucm for VM events in reloc mode, which patches
// dlopen everywhere; no MPI, no preload.  Each layout, in fresh processes:
//   glibc          no ucm: the truth
//   debian         Debian's libucs/libucm 1.13.1 (when installed), for comparison
//   unpatched      UCX master as it is
//   no-ldshim      master + series, libldshim.so.0 not on the path
//   ldshim         master + series + libldshim.so.0: must equal glibc
//   declined       the same with LDSHIM_DISABLE=1 (ldshim_dlopen_try has no
//                  answer): must equal unpatched
//   switched-off   UCX_MEM_DLOPEN_LDSHIM=n: must equal unpatched
// each with UCX defaults and with UCX_MEM_DLOPEN_PROCESS_RPATH=n.
// Without the cached build every test says SKIPPED and why.
// With LDSHIM_UCX_MASTER_CUDA_LIBS=DIR (a fake libcuda.so.1 and
// libcudart.so.13 there: tests/ucx-master/cuda_test.sh sets it) the same on
// the CUDA build (scripts/ucx-master.sh --cuda) through julia_mpi.c's
// "ucm-cuda" route: ucm's CUDA module installs the dlopen hook in reloc mode
// (UCX_MEM_CUDA_HOOK_MODE=reloc), its mmap hooks stay in bistro mode; Debian's
// 1.13.1, which has no CUDA module, is left out.
#include "../repro/julia_report.h"
#include "../support/test_machine.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <memory>

using namespace ldshim::difftest;
using namespace ldshim::difftest::report;

#ifndef UCX_MASTER_SCRIPT
#error "UCX_MASTER_SCRIPT must name scripts/ucx-master.sh"
#endif
#ifndef LDSHIM_LIB_DIR
#error "LDSHIM_LIB_DIR must name the directory of libldshim.so.0"
#endif

namespace {

// The cache directory of scripts/ucx-master.sh --check, or "" with the reason.
struct Build {
    std::string dir, why;
};
const char* cuda_libs() { return getenv("LDSHIM_UCX_MASTER_CUDA_LIBS"); }
const Build& build() {
    static const Build b = [] {
        Build r;
        std::string out;
        std::unique_ptr<FILE, int (*)(FILE*)> f(
            popen(cuda_libs() ? UCX_MASTER_SCRIPT " --cuda --check 2>&1" : UCX_MASTER_SCRIPT " --check 2>&1", "r"),
            pclose);
        std::array<char, 4096> buf{};
        while (f && fgets(buf.data(), buf.size(), f.get())) out += buf.data();
        int status = f ? pclose(f.release()) : -1;
        std::string last = out;
        while (!last.empty() && last.back() == '\n') last.pop_back();
        last = last.substr(last.find_last_of('\n') == std::string::npos ? 0 : last.find_last_of('\n') + 1);
        if (status == 0 && !last.empty() && last[0] == '/')
            r.dir = last;
        else
            r.why = out;
        return r;
    }();
    return b;
}

std::string line(const Capture& x) {
    return !x.results.empty()  ? x.results[0]
           : !x.errors.empty() ? "ERROR " + x.errors.back()
                               : std::string("(no output, exit " + std::to_string(x.status) + ")");
}

struct Row {
    std::string where;
    std::array<bool, 10> same{};  // unpatched, no-ldshim, ldshim, declined, off; defaults then PROCESS_RPATH=n
    bool as_1_13 = false, as_1_13_norpath = false;
    std::string debian = "-", debian_norpath = "-";  // Debian's 1.13.1 on the same route, when installed
};
std::vector<std::pair<std::string, Row>>& table() {
    static std::vector<std::pair<std::string, Row>> t;
    return t;
}
const char* pf(bool b) { return b ? "PASS" : "FAIL"; }

// A directory holding only a symbolic link libldshim.so.0 to the build's:
// libldshim.so.0 linked into a directory on LD_LIBRARY_PATH, as `ln -s`,
// package views and module trees do.  libldshim must find its probe beside
// the file the link names.
const std::string& linked_dir() {
    static const std::string d = [] {
        char tmpl[] = "/tmp/ldshim-ucx-master-linked-XXXXXX";
        std::string dir = mkdtemp(tmpl) ? tmpl : "";
        if (!dir.empty() && symlink(LDSHIM_LIB_DIR "/libldshim.so.0", (dir + "/libldshim.so.0").c_str()) != 0)
            dir.clear();
        return dir;
    }();
    return d;
}

void run(const Layout& l, Tree& t) {
    const std::string limit = "timeout 60";
    const std::string unpatched = build().dir + "/unpatched/lib", patched = build().dir + "/patched/lib";
    Env layout = layout_env(l, t);
    auto mode = [&](const std::string& ucx_dirs, bool norpath, Env extra = {}) {
        Env e = mpi_loopback_env();
        // The fake driver and runtime after UCX's directories.
        const std::string dirs = cuda_libs() ? ucx_dirs + ":" + cuda_libs() : ucx_dirs;
        std::string ldlp = dirs;
        if (cuda_libs()) {
            e.emplace_back("UCX_MEM_CUDA_HOOK_MODE", "reloc");
        } else {
            e.emplace_back("UCX_MEM_MMAP_HOOK_MODE", "reloc");
            e.emplace_back("UCX_MEM_MALLOC_RELOC", "n");
        }
        for (const auto& [k, v] : layout)
            if (k == "LD_LIBRARY_PATH")
                ldlp = dirs.empty() ? v : v + ":" + dirs;  // the layout's own directories first: no libucm there
            else
                e.emplace_back(k, v);
        if (!ldlp.empty()) e.emplace_back("LD_LIBRARY_PATH", ldlp);
        if (norpath) e.emplace_back("UCX_MEM_DLOPEN_PROCESS_RPATH", "n");
        e.insert(e.end(), extra.begin(), extra.end());
        return line(t.real("bin/julia", {l.lib, cuda_libs() ? "ucm-cuda" : "ucm"}, e, limit));
    };
    const std::string truth = line(t.real("bin/julia", {l.lib, "nompi"}, layout, limit));
    auto copy = [](const std::string& s) {
        auto id = s.rfind(" id=");
        return s.rfind("ERROR ", 0) != 0 && id != std::string::npos ? s.substr(id) : s;
    };
    auto ok = [&](const std::string& s) { return l.compare_paths ? s == truth : copy(s) == copy(truth); };

    Row row;
    row.where = truth;
    if (row.where.find(t.root()) != std::string::npos) row.where.erase(row.where.find(t.root()), t.root().size());
    const std::string with = patched + ":" LDSHIM_LIB_DIR;
    std::array<std::string, 10> got;
    for (int norpath = 0; norpath < 2; ++norpath) {
        int i = norpath * 5;
        got[i] = mode(unpatched, norpath);
        got[i + 1] = mode(patched, norpath);
        got[i + 2] = mode(with, norpath);
        got[i + 3] = mode(with, norpath, {{"LDSHIM_DISABLE", "1"}});
        got[i + 4] = mode(with, norpath, {{"UCX_MEM_DLOPEN_LDSHIM", "n"}});
        for (int k = 0; k < 5; ++k) row.same[i + k] = k == 2 ? ok(got[i + k]) : got[i + k] == truth;
        const char* rp = norpath ? " (PROCESS_RPATH=n)" : "";
        EXPECT_TRUE(row.same[i + 2]) << l.name << rp << ": patched master + ldshim gave " << got[i + 2] << ", glibc "
                                     << truth;
        EXPECT_EQ(got[i + 3], got[i]) << l.name << rp << ": ldshim declining differs from unpatched master";
        EXPECT_EQ(got[i + 4], got[i]) << l.name << rp << ": UCX_MEM_DLOPEN_LDSHIM=n differs from unpatched master";
        EXPECT_EQ(got[i + 1], got[i]) << l.name << rp << ": without libldshim the series differs from master";
    }
    // The same through a linked libldshim.so.0.
    ASSERT_FALSE(linked_dir().empty()) << "cannot make a directory with a link to libldshim.so.0";
    const std::string linked = patched + ":" + linked_dir();
    std::array<bool, 2> through_link{};
    for (int norpath = 0; norpath < 2; ++norpath) {
        std::string got_linked = mode(linked, norpath);
        through_link[norpath] = ok(got_linked);
        EXPECT_TRUE(through_link[norpath])
            << l.name << (norpath ? " (PROCESS_RPATH=n)" : "") << ": patched master + a linked libldshim.so.0 gave "
            << got_linked << ", glibc " << truth;
    }
    const std::string debian = "/usr/" + ldshim::testmachine::lib_dir();
    if (!cuda_libs() && sh("test -e " + debian + "/libucm.so.0 -a -e " + debian + "/libucs.so.0") == 0) {
        row.debian = pf(mode("", false) == truth);
        row.debian_norpath = pf(mode("", true) == truth);
    }
    row.as_1_13 = row.same[0] == l.ucx;
    row.as_1_13_norpath = row.same[5] == l.ucx_norpath;
    table().emplace_back(l.name, row);
    std::printf(
        "[ CASE     ] %-19s glibc: %-44s unpatched master: %s/%s  patched, no ldshim: %s/%s  "
        "patched + ldshim: %s/%s  linked ldshim: %s/%s  declining: %s/%s  switched off: %s/%s\n",
        l.name.c_str(), row.where.c_str(), pf(row.same[0]), pf(row.same[5]), pf(row.same[1]), pf(row.same[6]),
        pf(row.same[2]), pf(row.same[7]), pf(through_link[0]), pf(through_link[1]), pf(row.same[3]), pf(row.same[8]),
        pf(row.same[4]), pf(row.same[9]));
}

class TablePrinter : public ::testing::EmptyTestEventListener {
    void OnTestProgramEnd(const ::testing::UnitTest&) override {
        if (table().empty()) return;
        std::printf(
            "\n| case | glibc loads | Debian 1.13.1 | Debian 1.13.1 PROCESS_RPATH=n | unpatched master | unpatched "
            "master PROCESS_RPATH=n | patched, no ldshim | "
            "patched + ldshim | patched + ldshim PROCESS_RPATH=n | patched, ldshim declining | patched, "
            "UCX_MEM_DLOPEN_LDSHIM=n | master = 1.13.1 (both settings) |\n"
            "|---|---|---|---|---|---|---|---|---|---|---|---|\n");
        std::array<int, 7> pass{};
        int debian = 0, debian_norpath = 0;
        for (const auto& [name, r] : table()) {
            std::array<bool, 7> v{r.same[0], r.same[5], r.same[1], r.same[2], r.same[7], r.same[3], r.same[4]};
            std::printf("| %s | %s | %s | %s |", name.c_str(), r.where.c_str(), r.debian.c_str(),
                        r.debian_norpath.c_str());
            debian += r.debian == "PASS";
            debian_norpath += r.debian_norpath == "PASS";
            for (std::size_t i = 0; i < v.size(); ++i) {
                pass[i] += v[i];
                std::printf(" %s |", pf(v[i]));
            }
            std::printf(" %s |\n", r.as_1_13 && r.as_1_13_norpath ? "yes" : "**no**");
        }
        if (cuda_libs())  // Debian's 1.13.1 has no CUDA module: not run
            std::printf("| **same as glibc** | | - | - |");
        else
            std::printf("| **same as glibc** | | %d/%zu | %d/%zu |", debian, table().size(), debian_norpath,
                        table().size());
        for (int p : pass) std::printf(" %d/%zu |", p, table().size());
        std::printf(" |\n");
    }
};

}  // namespace

class UcxMasterLayout : public ::testing::TestWithParam<Layout> {
protected:
    void SetUp() override {
        if (build().dir.empty())
            GTEST_SKIP() << "SKIPPED: no cached UCX master build (scripts/ucx-master.sh builds it, 233-306 s cold on 2 "
                            "shared cores; this suite does not): "
                         << build().why;
        if (!ldshim::testmachine::for_this_machine(build().dir + "/patched/lib/libucm.so.0"))
            GTEST_SKIP() << "SKIPPED: the cached UCX master build is not for " << ldshim::testmachine::kThis.triplet;
    }
};

TEST_P(UcxMasterLayout, patched_master_with_ldshim_loads_what_glibc_loads) {
    const Layout& l = GetParam();
    Tree t;
    l.build(t);
    run(l, t);
}

INSTANTIATE_TEST_SUITE_P(Report, UcxMasterLayout, ::testing::ValuesIn(layouts()), layout_name);

int main(int argc, char** argv) {
    ::testing::InitGoogleTest(&argc, argv);
    ::testing::UnitTest::GetInstance()->listeners().Append(new TablePrinter);
    int rc = RUN_ALL_TESTS();
    if (!linked_dir().empty()) {
        unlink((linked_dir() + "/libldshim.so.0").c_str());
        rmdir(linked_dir().c_str());
    }
    // Nothing ran without the build: say so to meson (77 = skipped).
    return rc == 0 && build().dir.empty() ? 77 : rc;
}
