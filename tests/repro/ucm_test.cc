// The original report on the real stack, the no-MPI route: UCX's ucm (Debian's
// libucm 1.13) in reloc mode patches dlopen in every GOT; libjulia's dlopen
// of libopenlibm then searches from libucm.  Each case runs in four modes, in
// fresh processes:
//   glibc        no UCX: the truth
//   ucx          ucm active, UCX defaults (its RPATH workaround on)
//   ucx-norpath  ucm active, UCX_MEM_DLOPEN_PROCESS_RPATH=n (as in the report)
//   ldshim       ucm active + LD_PRELOAD=libldshim_preload.so
// ldshim must equal glibc in every case; the UCX modes are recorded, and the
// failures measured on this machine are pinned so that a UCX change shows up.
#include "../differential/harness.h"
#include "../support/test_machine.h"

#include <gtest/gtest.h>

#include <cstdio>

using namespace ldshim::difftest;

#ifndef PRELOAD_LIB_PATH
#error "PRELOAD_LIB_PATH must name libldshim_preload.so"
#endif

namespace {

LibSpec so(std::string soname = {}) { return LibSpec{std::move(soname)}; }

bool ucx_available() {
    const std::string dir = "/usr/" + ldshim::testmachine::lib_dir();
    return sh("test -e " + dir + "/libucm.so.0 -a -e " + dir + "/libucs.so.0") == 0;
}

struct Row {
    std::string name;
    bool ucx = false, ucx_norpath = false;
};
std::vector<Row>& table() {
    static std::vector<Row> t;
    return t;
}

// Runs one case in the four modes; returns whether each UCX mode matched glibc.
Row run_case(const std::string& name, const Tree& t, const std::string& prog, const std::string& op, Env env = {}) {
    const std::string limit = "timeout 60";  // the known ucm hang must not stall CI
    Env ucx = env;
    ucx.emplace_back("UCX_MEM_MMAP_HOOK_MODE", "reloc");
    ucx.emplace_back("UCX_MEM_MALLOC_RELOC", "n");
    Env norpath = ucx, with_ldshim = ucx;
    norpath.emplace_back("UCX_MEM_DLOPEN_PROCESS_RPATH", "n");
    with_ldshim.emplace_back("LD_PRELOAD", PRELOAD_LIB_PATH);
    Capture truth = t.real(prog, {op}, env, limit);
    Capture a = t.real(prog, {"U:", op}, ucx, limit);
    Capture b = t.real(prog, {"U:", op}, norpath, limit);
    Capture c = t.real(prog, {"U:", op}, with_ldshim, limit);
    EXPECT_EQ(truth.results.size() + truth.errors.size(), 1u) << name << ": the driver did not run";
    EXPECT_EQ(truth.results, c.results) << name << "\n"
                                        << unified_diff(truth.results, c.results, "glibc", "ucm + ldshim");
    EXPECT_EQ(truth.errors, c.errors) << name << "\n" << unified_diff(truth.errors, c.errors, "glibc", "ucm + ldshim");
    auto same = [&](const Capture& x) { return x.results == truth.results && x.errors == truth.errors; };
    Row row{name, same(a), same(b)};
    table().push_back(row);
    std::printf("[ CASE     ] %-28s glibc: %-40s ucx: %s  ucx-norpath: %s  ldshim: %s\n", name.c_str(),
                truth.results.empty() ? "not found" : truth.results[0].substr(t.root().size()).c_str(),
                row.ucx ? "PASS" : "FAIL", row.ucx_norpath ? "PASS" : "FAIL",
                (c.results == truth.results && c.errors == truth.errors) ? "PASS" : "FAIL");
    return row;
}

class UcmRepro : public ::testing::Test {
protected:
    void SetUp() override {
        if (!ucx_available()) GTEST_SKIP() << "SKIPPED: libucm.so.0/libucs.so.0 not installed (Debian libucx0)";
    }
};

}  // namespace

TEST_F(UcmRepro, rpath_the_original_report) {
    Tree t;
    t.lib("lib/julia/libopenlibm.so", so());
    t.julia({.rpath = "$ORIGIN:$ORIGIN/julia"});
    Row r = run_case("rpath", t, "bin/prog", "l:libopenlibm.so");
    EXPECT_FALSE(r.ucx_norpath) << "UCX with its workaround off no longer reproduces the report";
}

TEST_F(UcmRepro, runpath) {
    Tree t;
    t.lib("lib/julia/libopenlibm.so", so());
    t.julia({.runpath = "$ORIGIN:$ORIGIN/julia"});
    run_case("runpath", t, "bin/prog", "l:libopenlibm.so");
}

TEST_F(UcmRepro, runpath_not_inherited) {
    Tree t;
    t.lib("lib/julia/libopenlibm.so", so());
    t.julia({}, {.runpath = "$ORIGIN/../lib:$ORIGIN/../lib/julia"});
    // Recorded, not pinned: this layout (RUNPATH on the executable) does not
    // expose UCX's "wrongly found" of the reference table.
    run_case("runpath-noinherit", t, "bin/prog", "l:libopenlibm.so");
}

TEST_F(UcmRepro, hwcaps_only) {
    Tree t;
    t.lib("lib/julia/glibc-hwcaps/x86-64-v2/libopenlibm.so", so());
    t.julia({.rpath = "$ORIGIN:$ORIGIN/julia"});
    Row r = run_case("hwcaps-only", t, "bin/prog", "l:libopenlibm.so");
    // On aarch64 glibc names no glibc-hwcaps subdirectory: not found either way.
    if (ldshim::testmachine::has_hwcaps_names()) {
        EXPECT_FALSE(r.ucx) << "UCX's workaround now searches glibc-hwcaps subdirectories";
    }
}

TEST_F(UcmRepro, executable_caller_with_runpath) {
    Tree t;
    t.lib("run/libopenlibm.so", so());
    t.exe("bin/prog", {.runpath = t.abs("run")});
    Row r = run_case("exe-caller-runpath", t, "bin/prog", "o:libopenlibm.so");
    EXPECT_FALSE(r.ucx) << "UCX's workaround now uses an executable's RUNPATH";
}

TEST_F(UcmRepro, internal_and_missing) {
    Tree t;
    t.lib("lib/julia/libjulia-internal.so.1", so("libjulia-internal.so.1"));
    t.julia({.rpath = "$ORIGIN:$ORIGIN/julia"});
    run_case("internal", t, "bin/prog", "l:libjulia-internal.so.1");
    run_case("missing", t, "bin/prog", "l:libnothere.so");
}
