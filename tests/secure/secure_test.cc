// Secure mode end to end: a set-user-ID-root program, run by an unprivileged
// user through setpriv, asks ldshim's resolver and then the real loader
// about the same names.  In secure mode LD_LIBRARY_PATH is ignored and a
// program's $ORIGIN only expands inside trusted directories; ldshim must
// agree with the loader on every name, and must not use the HOME/XDG
// configuration cache either.
#include "../support/test_machine.h"
#include "differential/harness.h"
#include "fixture_cc.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <sstream>

using namespace ldshim::difftest;

namespace {

std::map<std::string, std::string> answers(const std::string& text, const std::string& who) {
    std::map<std::string, std::string> m;
    std::istringstream in(text);
    for (std::string w, name, what; in >> w;) {
        if (w == who && in >> name >> what) m[name] = what;
    }
    return m;
}

}  // namespace

TEST(Secure, setuid_program_resolves_like_the_loader_and_ignores_the_environment) {
    if (geteuid() != 0) GTEST_SKIP() << "SKIPPED: making a set-user-ID-root program needs root";
    if (const char* emulator = ldshim::testmachine::emulator())
        GTEST_SKIP() << "SKIPPED: under " << emulator << " (binfmt_misc) a program does not run set-user-ID";
    if (sh("command -v setpriv > /dev/null") != 0) GTEST_SKIP() << "SKIPPED: setpriv (util-linux) is missing";
    Tree t;
    ASSERT_EQ(chmod(t.root().c_str(), 0755), 0);
    t.lib("lib/libA.so", {.soname = "libA.so"});
    t.lib("env/libB.so", {.soname = "libB.so"});
    t.lib("abs/libC.so", {.soname = "libC.so"});
    t.mkdir("bin");
    t.mkdir("evil");
    ASSERT_EQ(chmod(t.abs("evil").c_str(), 0777), 0);
    std::string probe = t.abs("bin/probe");
    // $ORIGIN (untrusted here), an absolute RPATH, and ldshim itself.
    ASSERT_EQ(sh(FIXTURE_CC " -o " + quote(probe) + " " + quote(std::string(FIXTURE_DIR) + "/probe.c") + " -I" +
                 quote(LDSHIM_INCLUDE) + " -I" + quote(LDSHIM_GEN_INCLUDE) + " -L" + quote(LDSHIM_LIBDIR) +
                 " -lldshim -ldl -Wl,--disable-new-dtags -Wl,-rpath," +
                 quote("$ORIGIN/../lib:" + t.abs("abs") + ":" + LDSHIM_LIBDIR)),
              0);
    ASSERT_EQ(sh("chown root:root " + quote(probe) + " && chmod 4755 " + quote(probe)), 0);
    for (const char* d : {"lib", "env", "abs", "bin"}) chmod(t.abs(d).c_str(), 0755);
    // libldshim must be readable by nobody on its way from the build tree.
    std::string run =
        "cd / && setpriv --reuid=65534 --regid=65534 --clear-groups env LD_LIBRARY_PATH=" + quote(t.abs("env")) +
        " HOME=" + quote(t.abs("evil")) + " XDG_CACHE_HOME=" + quote(t.abs("evil")) + " LDSHIM_NO_CACHE=0 " +
        quote(probe) + " libA.so libB.so libC.so libz.so.1 libnothere.so";
    int rc = sh(run + " > " + quote(t.abs("out")) + " 2>&1");
    std::string out = read_file(t.abs("out"));
    if (out.find("cannot open shared object file") != std::string::npos && out.find("libldshim") != std::string::npos)
        GTEST_SKIP() << "SKIPPED: nobody cannot read the build tree's libldshim: " << out;
    ASSERT_EQ(rc, 0) << out;
    EXPECT_NE(out.find("secure 1 euid 0"), std::string::npos) << "the probe must run set-user-ID:\n" << out;
    auto ldshim = answers(out, "ldshim"), loader = answers(out, "loader");
    EXPECT_EQ(ldshim, loader) << out;
    EXPECT_EQ(loader["libA.so"], "not-found") << "$ORIGIN outside trusted directories is dropped\n" << out;
    EXPECT_EQ(loader["libB.so"], "not-found") << "LD_LIBRARY_PATH is ignored\n" << out;
    EXPECT_EQ(loader["libC.so"], t.abs("abs") + "/libC.so") << out;
    EXPECT_EQ(sh("test -z \"$(ls -A " + quote(t.abs("evil")) + ")\""), 0)
        << "a set-id process must not write the HOME/XDG configuration cache";

    // The same program run normally (not secure) finds libA through $ORIGIN
    // and libB through LD_LIBRARY_PATH, and ldshim agrees again.
    sh("chmod 0755 " + quote(probe));
    rc = sh("cd / && env LD_LIBRARY_PATH=" + quote(t.abs("env")) + " " + quote(probe) + " libA.so libB.so libC.so > " +
            quote(t.abs("out2")) + " 2>&1");
    std::string out2 = read_file(t.abs("out2"));
    ASSERT_EQ(rc, 0) << out2;
    EXPECT_EQ(answers(out2, "ldshim"), answers(out2, "loader")) << out2;
    EXPECT_EQ(answers(out2, "loader")["libA.so"], t.abs("bin/../lib/libA.so")) << out2;
}

// The preload's LDSHIM_* switches (debug output, the CUDA hooks, the hooks
// log) must do nothing in a set-id process.  The preload is linked in as a
// dependency here, since the loader would not preload it from the build tree.
TEST(Secure, ldshim_variables_are_ignored_in_a_setuid_process) {
    if (geteuid() != 0) GTEST_SKIP() << "SKIPPED: making a set-user-ID-root program needs root";
    if (const char* emulator = ldshim::testmachine::emulator())
        GTEST_SKIP() << "SKIPPED: under " << emulator << " (binfmt_misc) a program does not run set-user-ID";
    if (sh("command -v setpriv > /dev/null") != 0) GTEST_SKIP() << "SKIPPED: setpriv (util-linux) is missing";
    Tree t;
    ASSERT_EQ(chmod(t.root().c_str(), 0755), 0);
    t.mkdir("bin");
    t.mkdir("out");
    chmod(t.abs("bin").c_str(), 0755);
    ASSERT_EQ(chmod(t.abs("out").c_str(), 0777), 0);
    std::string probe = t.abs("bin/probe");
    ASSERT_EQ(sh(FIXTURE_CC " -o " + quote(probe) + " " + quote(std::string(FIXTURE_DIR) + "/probe.c") + " -I" +
                 quote(LDSHIM_INCLUDE) + " -I" + quote(LDSHIM_GEN_INCLUDE) + " -Wl,--no-as-needed -L" +
                 quote(LDSHIM_PRELOAD_DIR) + " -L" + quote(LDSHIM_LIBDIR) +
                 " -l:libldshim_preload.so -lldshim -ldl -Wl,--disable-new-dtags -Wl,-rpath," +
                 quote(std::string(LDSHIM_PRELOAD_DIR) + ":" + LDSHIM_LIBDIR)),
              0);
    std::string vars = "LDSHIM_DEBUG=1 LDSHIM_CUDA_HOOKS=1 LDSHIM_HOOKS_LOG=" + quote(t.abs("out/hooks.log"));
    // Not set-id: the switches work (debug lines on stderr, a hooks log).
    ASSERT_EQ(sh("cd / && env " + vars + " " + quote(probe) + " libz.so.1 > " + quote(t.abs("plain.out")) + " 2>&1"), 0)
        << read_file(t.abs("plain.out"));
    EXPECT_NE(read_file(t.abs("plain.out")).find("ldshim: dlopen(\"libz.so.1\")"), std::string::npos)
        << read_file(t.abs("plain.out"));
    EXPECT_EQ(sh("test -f " + quote(t.abs("out/hooks.log"))), 0) << "LDSHIM_HOOKS_LOG is written when not set-id";
    sh("rm -f " + quote(t.abs("out/hooks.log")));
    // Set-user-ID root, run by nobody: nothing.
    ASSERT_EQ(sh("chown root:root " + quote(probe) + " && chmod 4755 " + quote(probe)), 0);
    int rc = sh("cd / && setpriv --reuid=65534 --regid=65534 --clear-groups env " + vars + " " + quote(probe) +
                " libz.so.1 > " + quote(t.abs("secure.out")) + " 2>&1");
    std::string out = read_file(t.abs("secure.out"));
    ASSERT_EQ(rc, 0) << out;
    EXPECT_NE(out.find("secure 1"), std::string::npos) << out;
    EXPECT_EQ(out.find("ldshim: "), std::string::npos) << "LDSHIM_DEBUG must be ignored\n" << out;
    EXPECT_NE(sh("test -e " + quote(t.abs("out/hooks.log"))), 0) << "LDSHIM_HOOKS_LOG must be ignored";
}
