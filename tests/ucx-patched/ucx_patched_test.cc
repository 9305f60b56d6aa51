// UCX's ucm patched to call ldshim (contrib/ucx/), on the real stack: Debian's
// Open MPI + libucs/libucp with the patched libucm first in LD_LIBRARY_PATH
// (built by scripts/ucx-patched.sh, cached), ucm in reloc mode, no preload.
// The fifteen Julia-shaped layouts of tests/repro/mpi_test.cc, each in fresh
// processes:
//   glibc          MPI_Init not called: no ucm hook, the truth
//   unpatched      Debian's libucm 1.13.1, UCX defaults / PROCESS_RPATH=n
//   no-ldshim      the patched libucm, libldshim.so.0 not installed: must give
//                  exactly what the unpatched one gives (and the pinned table)
//   switched-off   the patched libucm, libldshim present, UCX_MEM_DLOPEN_LDSHIM=n:
//                  the same as unpatched, and libldshim never looked for
//   declined       the patched libucm, libldshim loaded but switched off
//                  (LDSHIM_DISABLE=1, so ldshim_dlopen_try has no answer): the
//                  same as unpatched -- ucm's own RPATH logic runs
//   ldshim         the patched libucm + libldshim.so.0: must equal glibc, with
//                  UCX defaults and PROCESS_RPATH=n, singleton and mpirun -np 2
// A test that cannot run says SKIPPED and why.
#include "../repro/julia_report.h"
#include "../support/test_machine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <memory>

using namespace ldshim::difftest;
using namespace ldshim::difftest::report;

#ifndef UCX_PATCHED_SCRIPT
#error "UCX_PATCHED_SCRIPT must name scripts/ucx-patched.sh"
#endif
#ifndef LDSHIM_LIB_DIR
#error "LDSHIM_LIB_DIR must name the directory of libldshim.so.0"
#endif
#ifndef PROBE_SRC
#error "PROBE_SRC must name tests/ucx-patched/fixtures/slot_probe.c"
#endif

namespace {

// libldshim.so.0 where the loader would find it without our LD_LIBRARY_PATH:
// then "not installed" cannot be shown here.
bool ldshim_installed_system_wide() {
    return sh("ldconfig -p 2>/dev/null | grep -q 'libldshim\\.so\\.0 ' || test -e /usr/local/lib/libldshim.so.0") == 0;
}

// The private prefix of the patched libucm, from the build script (cached
// after its first run); empty with the reason in `why` when it cannot be had.
// The script reaches no archive from here (LDSHIM_UCX_OFFLINE): this suite
// runs under the loopback guard, and scripts/test.sh fetches and builds first.
struct Patched {
    std::string prefix, why;
    bool skip = false;
};
const Patched& patched() {
    static const Patched p = [] {
        Patched r;
        std::string out;
        std::unique_ptr<FILE, int (*)(FILE*)> f(popen("LDSHIM_UCX_OFFLINE=1 " UCX_PATCHED_SCRIPT " 2>&1", "r"), pclose);
        std::array<char, 4096> buf{};
        while (f && fgets(buf.data(), buf.size(), f.get())) out += buf.data();
        int status = f ? pclose(f.release()) : -1;
        int rc = status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        std::string last = out;
        while (!last.empty() && last.back() == '\n') last.pop_back();
        last = last.substr(last.find_last_of('\n') == std::string::npos ? 0 : last.find_last_of('\n') + 1);
        if (rc == 0 && !last.empty() && last[0] == '/') {
            r.prefix = last;
        } else {
            r.skip = rc == 77;
            r.why = "scripts/ucx-patched.sh exited with " + std::to_string(rc) + ":\n" + out;
        }
        return r;
    }();
    return p;
}

std::string line(const Capture& x) {
    return !x.results.empty()  ? x.results[0]
           : !x.errors.empty() ? "ERROR " + x.errors.back()
                               : std::string("(no output)");
}

// The last "trying file=" of the loader's search for `name` (the file it
// loaded, when the search ended there), "" when it never looked for `name`,
// "(not found in a directory)" when it looked but tried no file last.
std::string loaded_from(const Capture& x, const std::string& name) {
    std::string found;
    bool searched = false, in_group = false;
    for (const auto& l : x.search) {
        if (l.starts_with("find library=")) {
            in_group = l.starts_with("find library=" + name + " ");
            if (in_group) {
                searched = true;
                found = "(not found in a directory)";
            }
        } else if (in_group) {
            found = l.starts_with("  trying file=") ? l.substr(14) : "(not found in a directory)";
        }
    }
    return searched ? found : std::string();
}

std::string join_path(const std::vector<std::string>& dirs) {
    std::string s;
    for (const auto& d : dirs)
        if (!d.empty()) s += (s.empty() ? "" : ":") + d;
    return s;
}

// The case's own environment, with LD_LIBRARY_PATH extended by `dirs`
// (after the case's own directories: they hold no libopenlibm).
Env with_dirs(const Env& env, const std::vector<std::string>& dirs) {
    Env out;
    std::string ldlp;
    for (const auto& [k, v] : env)
        if (k == "LD_LIBRARY_PATH")
            ldlp = v;
        else
            out.emplace_back(k, v);
    std::vector<std::string> all{ldlp};
    all.insert(all.end(), dirs.begin(), dirs.end());
    if (!join_path(all).empty()) out.emplace_back("LD_LIBRARY_PATH", join_path(all));
    return out;
}

struct Row {
    std::string where;
    bool unpatched = false, unpatched_norpath = false, absent = false, absent_norpath = false, ldshim = false,
         ldshim_norpath = false, mpirun = false, mpirun_norpath = false;
};
std::vector<std::pair<std::string, Row>>& table() {  // in the order the cases ran
    static std::vector<std::pair<std::string, Row>> t;
    return t;
}

const char* pf(bool b) { return b ? "PASS" : "FAIL"; }

// Runs one layout in every mode; `compare_paths` = false compares the copy
// (its id) instead of l_name (ldshim hands ucm an absolute path).
void run(const std::string& name, Tree& t, const std::string& lib, Env env = {}, bool compare_paths = true) {
    const std::string limit = "timeout 60";  // a ucm hang in MPI_Init must not stall CI
    const std::string prefix_lib = patched().prefix + "/lib";
    auto mode = [&](const std::vector<std::string>& dirs, bool norpath, Env extra = {}) {
        Env e = ucx_env();
        Env c = with_dirs(env, dirs);
        e.insert(e.end(), c.begin(), c.end());
        e.insert(e.end(), extra.begin(), extra.end());
        if (norpath) e.emplace_back("UCX_MEM_DLOPEN_PROCESS_RPATH", "n");
        return t.real("bin/julia", {lib, "mpi"}, e, limit);
    };
    Capture truth = t.real("bin/julia", {lib, "nompi"}, env, limit);
    Capture unpatched = mode({}, false), unpatched_norpath = mode({}, true);
    Capture absent = mode({prefix_lib}, false), absent_norpath = mode({prefix_lib}, true);
    Capture fixed = mode({prefix_lib, LDSHIM_LIB_DIR}, false), fixed_norpath = mode({prefix_lib, LDSHIM_LIB_DIR}, true);
    Capture off = mode({prefix_lib, LDSHIM_LIB_DIR}, false, {{"UCX_MEM_DLOPEN_LDSHIM", "n"}});
    Capture declined = mode({prefix_lib, LDSHIM_LIB_DIR}, false, {{"LDSHIM_DISABLE", "1"}});

    auto copy = [](const std::string& l) {
        auto id = l.rfind(" id=");
        return l.rfind("ERROR ", 0) != 0 && id != std::string::npos ? l.substr(id) : l;
    };
    auto same = [&](const Capture& x) { return line(x) == line(truth); };
    auto ok = [&](const std::string& l) { return compare_paths ? l == line(truth) : copy(l) == copy(line(truth)); };

    // mpirun -np 2: both ranks must load glibc's copy.
    auto mpirun = [&](bool norpath) {
        std::string ldlp;
        for (const auto& [k, v] : env)
            if (k == "LD_LIBRARY_PATH") ldlp = v;
        ldlp = join_path({ldlp, prefix_lib, LDSHIM_LIB_DIR});
        std::string cmd = "cd " + quote(t.root()) + " && " + mpirun_ucx(2) +
                          " -x UCX_MEM_MMAP_HOOK_MODE=reloc -x UCX_MEM_MALLOC_RELOC=n -x " +
                          quote("LD_LIBRARY_PATH=" + ldlp);
        if (norpath) cmd += " -x UCX_MEM_DLOPEN_PROCESS_RPATH=n";
        for (const auto& [k, v] : env)
            if (k != "LD_LIBRARY_PATH") cmd += " -x " + quote(k + "=" + v);
        cmd += " bin/julia " + quote(lib) + " mpi > .out/mpirun 2>&1";
        std::vector<std::string> results;
        for (int attempt = 0; attempt < 2 && results.size() < 2; ++attempt) {
            // Under load mpirun rarely brings nothing back (see mpi_test.cc): once more.
            sh(cmd);
            results.clear();
            for (const auto& l : read_lines(t.abs(".out/mpirun")))
                if (l.rfind("RESULT ", 0) == 0 || l.rfind("ERROR ", 0) == 0)
                    results.push_back(l.rfind("RESULT ", 0) == 0 ? l.substr(7) : l);
        }
        bool good = results.size() == 2 && std::all_of(results.begin(), results.end(), ok);
        EXPECT_TRUE(good) << name << ": mpirun -np 2" << (norpath ? " PROCESS_RPATH=n" : "") << " gave "
                          << ::testing::PrintToString(results) << "; mpirun wrote:\n"
                          << read_file(t.abs(".out/mpirun"));
        return good;
    };

    Row row;
    row.where = line(truth);
    if (row.where.find(t.root()) != std::string::npos) row.where.erase(row.where.find(t.root()), t.root().size());
    row.unpatched = same(unpatched);
    row.unpatched_norpath = same(unpatched_norpath);
    row.absent = same(absent);
    row.absent_norpath = same(absent_norpath);
    row.ldshim = ok(line(fixed));
    row.ldshim_norpath = ok(line(fixed_norpath));
    row.mpirun = mpirun(false);
    row.mpirun_norpath = mpirun(true);
    table().emplace_back(name, row);
    std::printf(
        "[ CASE     ] %-19s glibc: %-44s unpatched: %s/%s  no-ldshim: %s/%s  ldshim: %s/%s  mpirun -np 2: %s/%s\n",
        name.c_str(), row.where.c_str(), pf(row.unpatched), pf(row.unpatched_norpath), pf(row.absent),
        pf(row.absent_norpath), pf(row.ldshim), pf(row.ldshim_norpath), pf(row.mpirun), pf(row.mpirun_norpath));

    EXPECT_TRUE(truth.status == 0 && (truth.results.size() + truth.errors.size()) >= 1) << name << ": no answer";
    // The patched libucm is the one in the process, and libldshim is loaded
    // (or looked for and missing, or never looked for).
    EXPECT_EQ(loaded_from(fixed, "libucm.so.0"), prefix_lib + "/libucm.so.0") << name;
    EXPECT_EQ(loaded_from(fixed, "libldshim.so.0"), std::string(LDSHIM_LIB_DIR) + "/libldshim.so.0") << name;
    EXPECT_EQ(loaded_from(absent, "libucm.so.0"), prefix_lib + "/libucm.so.0") << name;
    EXPECT_NE(loaded_from(absent, "libldshim.so.0"), "") << name << ": ucm did not look for libldshim.so.0";
    EXPECT_EQ(loaded_from(off, "libldshim.so.0"), "") << name << ": UCX_MEM_DLOPEN_LDSHIM=n still loaded libldshim";
    EXPECT_FALSE(loaded_from(unpatched, "libucm.so.0").starts_with(prefix_lib))
        << name << ": the unpatched runs did not use Debian's libucm";
    // ldshim: glibc's answer, whatever UCX_MEM_DLOPEN_PROCESS_RPATH says.
    EXPECT_TRUE(row.ldshim) << name << ": patched ucm + ldshim gave " << line(fixed) << ", glibc " << line(truth);
    EXPECT_TRUE(row.ldshim_norpath) << name << ": patched ucm + ldshim (PROCESS_RPATH=n) gave " << line(fixed_norpath)
                                    << ", glibc " << line(truth);
    // Without ldshim, or with it switched off: exactly unpatched UCX.
    if (ldshim_installed_system_wide()) {
        std::printf("[ SKIPPED  ] %s: libldshim.so.0 is installed system-wide: \"ldshim absent\" not checked\n",
                    name.c_str());
    } else {
        EXPECT_EQ(line(unpatched), line(absent)) << name << ": the fallback differs from unpatched UCX";
        EXPECT_EQ(line(unpatched_norpath), line(absent_norpath)) << name << ": the fallback (PROCESS_RPATH=n) differs";
    }
    EXPECT_EQ(line(unpatched), line(off)) << name << ": UCX_MEM_DLOPEN_LDSHIM=n differs from unpatched UCX";
    // ldshim loaded but without an answer (ldshim_dlopen_try declines): ucm's own path, unchanged.
    EXPECT_EQ(loaded_from(declined, "libldshim.so.0"), std::string(LDSHIM_LIB_DIR) + "/libldshim.so.0") << name;
    EXPECT_EQ(line(unpatched), line(declined)) << name << ": with ldshim declining (LDSHIM_DISABLE=1) ucm differs";
    const Layout* measured = find_layout(name);
    ASSERT_NE(measured, nullptr) << name;
    EXPECT_EQ(row.unpatched, measured->ucx) << name << ": UCX (defaults) changed behaviour: " << line(unpatched);
    EXPECT_EQ(row.unpatched_norpath, measured->ucx_norpath)
        << name << ": UCX (PROCESS_RPATH=n) changed behaviour: " << line(unpatched_norpath);
}

class UcxPatched : public ::testing::Test {
protected:
    void SetUp() override {
        if (!mpi_available())
            GTEST_SKIP() << "SKIPPED: Open MPI / UCX for " << ldshim::testmachine::kThis.triplet
                         << " not installed (openmpi-bin, libucx0; on aarch64 scripts/arm64-repro.sh "
                            "runs them in an arm64 root)";
        const Patched& p = patched();
        if (p.skip) GTEST_SKIP() << "SKIPPED: the patched libucm cannot be built here: " << p.why;
        ASSERT_FALSE(p.prefix.empty()) << "building the patched libucm failed: " << p.why;
    }
};

// Prints the table of the cases that ran (gtest runs every test first).
class TablePrinter : public ::testing::EmptyTestEventListener {
    void OnTestProgramEnd(const ::testing::UnitTest&) override {
        if (table().empty()) return;
        std::printf(
            "\n| case | glibc loads | unpatched defaults | unpatched PROCESS_RPATH=n | patched, no ldshim "
            "defaults | patched, no ldshim PROCESS_RPATH=n | patched + ldshim defaults | patched + ldshim "
            "PROCESS_RPATH=n | mpirun -np 2 defaults | mpirun -np 2 PROCESS_RPATH=n |\n"
            "|---|---|---|---|---|---|---|---|---|---|\n");
        std::array<int, 8> pass{};
        for (const auto& [name, r] : table()) {
            std::array<bool, 8> v{r.unpatched, r.unpatched_norpath, r.absent, r.absent_norpath,
                                  r.ldshim,    r.ldshim_norpath,    r.mpirun, r.mpirun_norpath};
            std::printf("| %s | %s |", name.c_str(), r.where.c_str());
            for (std::size_t i = 0; i < v.size(); ++i) {
                pass[i] += v[i];
                std::printf(" %s |", pf(v[i]));
            }
            std::printf("\n");
        }
        std::printf("| **same as glibc** | |");
        for (int p : pass) std::printf(" %d/%zu |", p, table().size());
        std::printf("\n");
    }
};

}  // namespace

// Each layout of the report (tests/repro/julia_report.cc), in every mode.
class UcxPatchedLayout : public UcxPatched, public ::testing::WithParamInterface<Layout> {};

TEST_P(UcxPatchedLayout, patched_ucm_with_ldshim_loads_what_glibc_loads) {
    const Layout& l = GetParam();
    Tree t;
    l.build(t);
    run(l.name, t, l.lib, layout_env(l, t), l.compare_paths);
}

INSTANTIATE_TEST_SUITE_P(Report, UcxPatchedLayout, ::testing::ValuesIn(layouts()), layout_name);

// ucm still patches every library that arrives through ldshim (its mmap hook
// and its dlopen are in the new library's slots when dlopen returns), and
// libldshim's own dlopen slot is left to libc (no recursion) while its other
// slots are patched as usual.
TEST_F(UcxPatched, ucm_patches_libraries_loaded_through_ldshim) {
    Tree t;
    t.lib("lib/julia/libopenlibm.so", {.flags = {"-fno-plt"}, .source = PROBE_SRC});
    julia(t, {.rpath = "$ORIGIN:$ORIGIN/julia"});
    const std::string prefix_lib = patched().prefix + "/lib";
    Env e = ucx_env();
    e.emplace_back("UCX_MEM_DLOPEN_PROCESS_RPATH", "n");  // only ldshim finds it: the report's setting
    Env with = e;
    with.emplace_back("LD_LIBRARY_PATH", prefix_lib + ":" LDSHIM_LIB_DIR);
    Capture a = t.real("bin/julia", {"libopenlibm.so", "mpi"}, with, "timeout 60");
    std::printf("[ PROBE    ] patched ucm + ldshim: %s\n", line(a).c_str());
    // 2 = libldshim's dlclose slot holds ucm's; 1 = its dlopen slot holds libc's;
    // 1, 1 = the new library's mmap and dlopen slots hold ucm's.
    EXPECT_EQ(line(a), t.abs("bin") + "/../lib/julia/libopenlibm.so id=2111");
    if (ldshim_installed_system_wide()) GTEST_SKIP() << "SKIPPED: libldshim.so.0 is installed system-wide";
    // The same probe found by ucm's own RPATH logic, without ldshim: the same
    // patching of the new library (and no libldshim in the process).
    Env defaults = ucx_env();
    defaults.emplace_back("LD_LIBRARY_PATH", prefix_lib);
    Capture b = t.real("bin/julia", {"libopenlibm.so", "mpi"}, defaults, "timeout 60");
    std::printf("[ PROBE    ] patched ucm, no ldshim, UCX defaults: %s\n", line(b).c_str());
    EXPECT_EQ(line(b), t.abs("bin") + "/../lib/julia/libopenlibm.so id=11");
}

// UCX_MEM_DLOPEN_LDSHIM in UCX's boolean spellings: off never looks for
// libldshim (the probe's libldshim digits are 0), on and unknown values use it.
TEST_F(UcxPatched, switch_spellings) {
    Tree t;
    t.lib("lib/julia/libopenlibm.so", {.flags = {"-fno-plt"}, .source = PROBE_SRC});
    julia(t, {.rpath = "$ORIGIN:$ORIGIN/julia"});
    const std::string found = t.abs("bin") + "/../lib/julia/libopenlibm.so";
    for (const auto& [value, id] : std::vector<std::pair<std::string, std::string>>{{"n", "11"},
                                                                                    {"no", "11"},
                                                                                    {"OFF", "11"},
                                                                                    {"0", "11"},
                                                                                    {"y", "2111"},
                                                                                    {"Yes", "2111"},
                                                                                    {"on", "2111"},
                                                                                    {"1", "2111"},
                                                                                    {"maybe", "2111"}}) {
        Env e = ucx_env();
        e.emplace_back("LD_LIBRARY_PATH", patched().prefix + "/lib:" LDSHIM_LIB_DIR);
        e.emplace_back("UCX_MEM_DLOPEN_LDSHIM", value);
        Capture c = t.real("bin/julia", {"libopenlibm.so", "mpi"}, e, "timeout 60");
        EXPECT_EQ(line(c), found + " id=" + id) << "UCX_MEM_DLOPEN_LDSHIM=" << value;
        EXPECT_EQ(loaded_from(c, "libldshim.so.0").empty(), id == "11") << "UCX_MEM_DLOPEN_LDSHIM=" << value;
    }
}

int main(int argc, char** argv) {
    ::testing::InitGoogleTest(&argc, argv);
    ::testing::UnitTest::GetInstance()->listeners().Append(new TablePrinter);
    return RUN_ALL_TESTS();
}
