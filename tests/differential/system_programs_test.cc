// Every dynamic executable in /usr/bin: the real loader under
// LD_TRACE_LOADED_OBJECTS=1 (so nothing runs) against ldsearch --keep-going;
// and (SystemProgramsHooks, the system-programs-hooks test) each one run
// with --version as it is and under the CUDA hooks.
#include "harness.h"

#include <grp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <ctime>

#include <gtest/gtest.h>

using namespace ldshim::difftest;

namespace {

// VAR=N (LDSHIM_SYSTEM_PROGRAMS_EVERY, LDSHIM_HOOKS_PROGRAMS_EVERY): every
// Nth program only, starting at the day's offset (scripts/asan.sh: its
// instrumented ldsearch is slow; the plain runs cover them all).
std::vector<std::string> share_of(std::vector<std::string> programs, const char* var, std::uint64_t fallback) {
    const std::uint64_t n = env_number(var, fallback);
    if (n <= 1) return programs;
    const auto offset = static_cast<std::size_t>(static_cast<std::uint64_t>(std::time(nullptr)) / 86400 % n);
    std::vector<std::string> share;
    for (std::size_t i = offset; i < programs.size(); i += n) share.push_back(programs[i]);
    std::printf("[ SHARE    ] %zu of the %zu programs: those whose index is %zu modulo %llu (%s)\n", share.size(),
                programs.size(), offset, static_cast<unsigned long long>(n), var);
    return share;
}

}  // namespace

TEST(SystemPrograms, every_usr_bin_program_matches_the_loader) {
    Tree t;  // scratch space for the captures
    std::vector<std::string> programs = usr_bin_programs(false);
    ASSERT_GT(programs.size(), 50u) << "too few programs to be a meaningful comparison";
    programs = share_of(std::move(programs), "LDSHIM_SYSTEM_PROGRAMS_EVERY", 1);

    std::size_t same = 0;
    std::vector<std::string> failures, skipped;
    for (const auto& p : programs) {
        // A set-gid program started by root with another group is AT_SECURE,
        // and then glibc 2.36 prints no LD_DEBUG output.  Start both sides
        // with the program's group as the real group, which keeps it non-secure.
        struct stat st {};
        stat(p.c_str(), &st);
        std::string prefix;
        if ((st.st_mode & S_ISGID) && st.st_gid != getgid())
            prefix = "setpriv --regid=" + std::to_string(st.st_gid) + " --clear-groups";
        if ((st.st_mode & S_ISUID) && st.st_uid != getuid())
            prefix = "setpriv --reuid=" + std::to_string(st.st_uid) + " --clear-groups";
        // Only root can take another identity; anyone else would see a
        // secure-mode program that prints nothing.
        if (!prefix.empty() && geteuid() != 0) {
            skipped.push_back(p);
            continue;
        }
        Capture real = t.real(p, {}, {{"LD_TRACE_LOADED_OBJECTS", "1"}}, prefix + " timeout 20");
        std::string out = t.abs(".out/sys");
        sh(prefix + " env -i PATH=/usr/bin:/bin " + quote(LDSEARCH_PATH) + " --keep-going " + quote(p) + " > " +
           quote(out) + " 2>/dev/null");
        auto mine = read_lines(out);
        if (real.search == mine && !mine.empty()) {
            ++same;
        } else {
            failures.push_back(p);
            if (failures.size() <= 5)
                ADD_FAILURE() << p << ":\n" << unified_diff(real.search, mine, "LD_DEBUG=libs " + p, "ldsearch " + p);
        }
    }
    std::printf("[ SYSTEM   ] %zu programs in /usr/bin, %zu identical, %zu different, %zu skipped\n", programs.size(),
                same, failures.size(), skipped.size());
    if (!skipped.empty())
        std::printf("[ SKIPPED  ] %zu set-id programs (%s ...): running them non-secure needs root\n", skipped.size(),
                    skipped.front().c_str());
    EXPECT_TRUE(failures.empty()) << failures.size() << " programs differ";
}

// Each program of /usr/bin run with --version as it is and under the CUDA
// hooks (LD_PRELOAD of the preload, LDSHIM_CUDA_HOOKS=1), by
// tests/realworld/hooks_run.sh in new network, UTS and IPC namespaces (no
// network at all): the same exit status, stdout and stderr, and no crash
// (a crash's stack from gdb).  A program whose two plain runs differ is
// counted as nondeterministic, not compared.  A quarter of the programs, a
// different quarter each day; LDSHIM_HOOKS_PROGRAMS_EVERY=1 runs them all.
TEST(SystemProgramsHooks, every_usr_bin_program_runs_the_same_under_the_cuda_hooks) {
    if (!HAVE_CUDA_HOOKS) GTEST_SKIP() << "built without CUDA's headers: LDSHIM_CUDA_HOOKS=1 installs no hook";
    if (getenv("LDSHIM_TEST_EMULATOR"))
        GTEST_SKIP() << "this machine's programs cannot load a preload built for " << getenv("LDSHIM_TEST_EMULATOR");
    Tree t;  // the programs' working directory and HOME
    std::vector<std::string> programs = usr_bin_programs(false);
    ASSERT_GT(programs.size(), 50u) << "too few programs to be a meaningful comparison";
    programs = share_of(std::move(programs), "LDSHIM_HOOKS_PROGRAMS_EVERY", 4);

    std::size_t same = 0, nondeterministic = 0, unhooked = 0, crashed = 0;
    std::vector<std::string> failures;
    const std::string out = t.abs(".out/hooks");
    for (const auto& p : programs) {
        const int rc =
            sh("cd " + quote(t.root()) + " && env -i PATH=/usr/bin:/bin HOME=" + quote(t.root()) +
               " LC_ALL=C.UTF-8 sh " + quote(HOOKS_RUN_SH) + " --isolate --timeout 10 " + quote(PRELOAD_LIB_PATH) +
               " " + quote(p) + " -- " + quote(p) + " --version > " + quote(out) + " 2>&1");
        const std::string report = read_file(out);
        if (rc == 77) GTEST_SKIP() << report;
        if (rc == 0 && report.rfind("[ NONDETERM]", 0) == 0) {
            ++nondeterministic;
            std::printf("%s", report.c_str());
        } else if (rc == 0) {
            ++same;
            if (report.find("the hooks never ran") != std::string::npos) ++unhooked;
        } else {
            if (rc == 2) ++crashed;
            failures.push_back(p);
            ADD_FAILURE() << report;
        }
    }
    std::printf(
        "[ HOOKS    ] %zu programs in /usr/bin run with --version under the hooks and without: %zu the same "
        "(in %zu of them the hooks never ran: set-id or static), %zu nondeterministic (not compared), "
        "%zu different, %zu crashed\n",
        programs.size(), same, unhooked, nondeterministic, failures.size() - crashed, crashed);
    EXPECT_TRUE(failures.empty()) << failures.size() << " programs differ or crash under the hooks";
}
