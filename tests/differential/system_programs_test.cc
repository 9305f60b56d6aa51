// Every dynamic executable in /usr/bin: the real loader under
// LD_TRACE_LOADED_OBJECTS=1 (so nothing runs) against ldsearch --keep-going.
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

// LDSHIM_SYSTEM_PROGRAMS_EVERY=N: every Nth program only, starting at the
// day's offset (scripts/asan.sh: its instrumented ldsearch is slow; the
// plain runs cover them all).
std::vector<std::string> share_of(std::vector<std::string> programs) {
    const std::uint64_t n = env_number("LDSHIM_SYSTEM_PROGRAMS_EVERY", 1);
    if (n <= 1) return programs;
    const auto offset = static_cast<std::size_t>(static_cast<std::uint64_t>(std::time(nullptr)) / 86400 % n);
    std::vector<std::string> share;
    for (std::size_t i = offset; i < programs.size(); i += n) share.push_back(programs[i]);
    std::printf(
        "[ SHARE    ] %zu of the %zu programs: those whose index is %zu modulo %llu "
        "(LDSHIM_SYSTEM_PROGRAMS_EVERY)\n",
        share.size(), programs.size(), offset, static_cast<unsigned long long>(n));
    return share;
}

}  // namespace

TEST(SystemPrograms, every_usr_bin_program_matches_the_loader) {
    Tree t;  // scratch space for the captures
    std::vector<std::string> programs = usr_bin_programs(false);
    ASSERT_GT(programs.size(), 50u) << "too few programs to be a meaningful comparison";
    programs = share_of(std::move(programs));

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
