// The CUDA hooks end to end: test programs and libraries are built here,
// across a matrix of link flags, against fake CUDA runtime and driver
// libraries (and, where the Toolkit is installed, the real libcudart), and
// run in their own processes.  Each program checks itself and prints
// "checks N failures M"; this file builds, runs and reports.
#include "../support/test_machine.h"
#include "differential/harness.h"
#include "fixture_cc.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

using ldshim::difftest::quote;
using ldshim::difftest::read_file;
using ldshim::difftest::sh;

namespace {

const std::string kFixtures = FIXTURE_DIR;
const std::string kCuda = CUDA_LIBDIR;

struct Variant {
    std::string name;
    std::string bind;  // "lazy" or "now"
    bool relro;
    bool pie;
    bool plt;
    std::string hash;  // "gnu" or "sysv"
};

std::string link_flags(const Variant& v) {
    std::string f =
        " -Wl,-z," + v.bind + (v.relro ? " -Wl,-z,relro" : " -Wl,-z,norelro") + " -Wl,--hash-style=" + v.hash;
    if (!v.plt) f += " -fno-plt";
    return f;
}

class HooksTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        char tmpl[] = "/tmp/ldshim-hooks-XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        root_ = new std::string(tmpl);
        const std::string& d = *root_;
        std::string cc = FIXTURE_CC " -std=gnu11 -O1 -Wall -Werror -I" + quote(kFixtures) + " ";
        ASSERT_EQ(sh(cc + "-fPIC -shared -fvisibility=hidden -Wl,-soname,libcuda.so.1 -o " +
                     quote(d + "/libcuda.so.1") + " " + quote(kFixtures + "/fake_cuda.c") + " -lpthread"),
                  0);
        ASSERT_EQ(sh(cc + "-fPIC -shared -fvisibility=hidden -Wl,-soname,libcudart.so.13 -Wl,--version-script=" +
                     quote(kFixtures + "/fake_cudart.map") + " -Wl,-rpath,'$ORIGIN' -o " +
                     quote(d + "/libcudart.so.13") + " " + quote(kFixtures + "/fake_cudart.c") + " -ldl -lpthread"),
                  0);
        ASSERT_EQ(
            sh(cc + "-fPIC -shared -o " + quote(d + "/libforeign.so") + " " + quote(kFixtures + "/foreign_hooker.c")),
            0);
    }
    static void TearDownTestSuite() {
        if (root_ && !std::getenv("LDSHIM_KEEP_TEST_DIRS")) sh("rm -rf " + quote(*root_));
        delete root_;
        root_ = nullptr;
    }

    // Builds the consumer program and its libraries with one variant's flags.
    static std::string build(const Variant& v) {
        std::string dir = *root_ + "/" + v.name;
        if (access((dir + "/consumer").c_str(), X_OK) == 0) return dir;
        EXPECT_EQ(sh("mkdir -p " + quote(dir)), 0);
        std::string cc = FIXTURE_CC " -std=gnu11 -O1 -Wall -Werror -I" + quote(kFixtures) + " -I" +
                         quote(LDSHIM_INCLUDE) + " -I" + quote(LDSHIM_GEN_INCLUDE) + " ";
        std::string libs = " -L" + quote(*root_) + " -l:libcudart.so.13 -l:libcuda.so.1";
        for (const char* n : {"consumer", "consumer2", "consumer3", "consumer4", "consumer5"}) {
            EXPECT_EQ(sh(cc + "-fPIC -shared" + link_flags(v) + " -Wl,-soname,lib" + n + ".so -o " +
                         quote(dir + "/lib" + n + ".so") + " " + quote(kFixtures + "/consumer_lib.c") + libs +
                         " -Wl,-rpath," + quote(*root_)),
                      0);
        }
        std::string pie = v.pie ? " -fPIE -pie" : " -fno-pie -no-pie";
        EXPECT_EQ(sh(cc + pie + link_flags(v) + " -o " + quote(dir + "/consumer") + " " +
                     quote(kFixtures + "/consumer.c") + " -L" + quote(dir) + " -lconsumer -L" + quote(*root_) +
                     " -lforeign" + libs + " -L" + quote(LDSHIM_LIBDIR) + " -lldshim -Wl,-rpath," +
                     quote(dir + ":" + *root_ + ":" + LDSHIM_LIBDIR) + " -lpthread -ldl"),
                  0);
        return dir;
    }

    // Runs the consumer in `mode`; returns its output, the status in *rc.
    static std::string run(const std::string& dir, const std::string& mode, int* rc, int timeout_s = 120) {
        std::string out = dir + "/" + mode + ".out";
        *rc = sh("timeout " + std::to_string(timeout_s) + " " + quote(dir + "/consumer") + " " + mode + " " +
                 quote(dir) + " > " + quote(out) + " 2>&1");
        return read_file(out);
    }

    static std::string* root_;
};
std::string* HooksTest::root_ = nullptr;

#define SKIP_WITHOUT_CUDA_HOOKS()                                                \
    if (!HAVE_CUDA_HOOKS)                                                        \
    GTEST_SKIP() << "SKIPPED: libldshim was built without CUDA headers (option " \
                    "cudatoolkit_include), so it has no CUDA hooks"

class HooksMatrix : public HooksTest, public ::testing::WithParamInterface<Variant> {};

TEST_P(HooksMatrix, every_function_and_path_is_hooked_and_uninstall_restores) {
    SKIP_WITHOUT_CUDA_HOOKS();
    std::string dir = build(GetParam());
    int rc = 0;
    std::string out = run(dir, "paths", &rc);
    EXPECT_EQ(rc, 0) << out;
    EXPECT_NE(out.find("failures 0"), std::string::npos) << out;
}

std::vector<Variant> matrix() {
    std::vector<Variant> v;
    struct Bind {
        const char* name;
        const char* bind;
        bool relro;
    };
    // lazy/now x RELRO: no RELRO, partial (lazy + relro), now without
    // RELRO, full (now + relro).
    for (Bind b : {Bind{"lazy_norelro", "lazy", false}, Bind{"partial_relro", "lazy", true},
                   Bind{"now_norelro", "now", false}, Bind{"full_relro", "now", true}})
        for (bool pie : {true, false})
            for (bool plt : {true, false})
                for (const char* hash : {"gnu", "sysv"})
                    v.push_back(
                        {std::string(b.name) + (pie ? "_pie" : "_nopie") + (plt ? "_plt" : "_noplt") + "_" + hash,
                         b.bind, b.relro, pie, plt, hash});
    return v;
}

INSTANTIATE_TEST_SUITE_P(LinkFlags, HooksMatrix, ::testing::ValuesIn(matrix()),
                         [](const ::testing::TestParamInfo<Variant>& i) { return i.param.name; });

TEST_F(HooksTest, another_hooker_in_the_slot_is_chained_and_comes_back_on_uninstall) {
    SKIP_WITHOUT_CUDA_HOOKS();
    std::string dir = build({"full_relro_pie_plt_gnu", "now", true, true, true, "gnu"});
    int rc = 0;
    std::string out = run(dir, "chain", &rc);
    EXPECT_EQ(rc, 0) << out;
    EXPECT_NE(out.find("failures 0"), std::string::npos) << out;
}

TEST_F(HooksTest, stress_4_allocating_threads_and_4_threads_dlopen_dlclose_500_times) {
    SKIP_WITHOUT_CUDA_HOOKS();
    std::string dir = build({"partial_relro_pie_plt_gnu", "lazy", true, true, true, "gnu"});
    int rc = 0;
    std::string out = run(dir, "stress", &rc, 300);
    EXPECT_EQ(rc, 0) << out;
    EXPECT_NE(out.find("failures 0"), std::string::npos) << out;
}

TEST_F(HooksTest, real_libcudart_errors_pass_through_unchanged_with_nothing_registered) {
    SKIP_WITHOUT_CUDA_HOOKS();
    if (access((kCuda + "/libcudart.so.13").c_str(), R_OK) != 0)
        GTEST_SKIP() << "SKIPPED: no " << kCuda << "/libcudart.so.13 (CUDA 13 Toolkit not installed)";
    if (!ldshim::testmachine::for_this_machine(kCuda + "/libcudart.so.13"))
        GTEST_SKIP() << "SKIPPED: " << kCuda << "/libcudart.so.13 is not for " << ldshim::testmachine::kThis.triplet;
    if (access("/dev/nvidiactl", F_OK) == 0)
        GTEST_SKIP() << "SKIPPED: this machine has an NVIDIA driver; the no-driver error path cannot be checked";
    std::string dir = *root_ + "/real";
    ASSERT_EQ(sh("mkdir -p " + quote(dir) + " && " FIXTURE_CC " -std=gnu11 -Wall -Werror -I" + quote(kFixtures) +
                 " -I" + quote(LDSHIM_INCLUDE) + " -I" + quote(LDSHIM_GEN_INCLUDE) + " -o " + quote(dir + "/real") +
                 " " + quote(kFixtures + "/real_cudart.c") + " -L" + quote(kCuda) + " -l:libcudart.so.13 -L" +
                 quote(LDSHIM_LIBDIR) + " -lldshim -Wl,-rpath," + quote(kCuda + ":" + LDSHIM_LIBDIR)),
              0);
    ASSERT_EQ(
        sh("cd " + quote(dir) + " && timeout 60 ./real > plain.out 2>&1 && timeout 60 ./real hooks > hooked.out 2>&1"),
        0)
        << read_file(dir + "/plain.out") << read_file(dir + "/hooked.out");
    std::string plain = read_file(dir + "/plain.out"), hooked = read_file(dir + "/hooked.out");
    EXPECT_NE(hooked.find("install 0\n"), std::string::npos) << hooked;
    // Every call's result, line by line, is the same with the hooks in.
    std::istringstream a(plain);
    for (std::string line; std::getline(a, line);) {
        if (line.rfind("op ", 0) == 0) continue;
        EXPECT_NE(hooked.find(line + "\n"), std::string::npos) << "hooked run lacks: " << line << "\n" << hooked;
    }
    EXPECT_EQ(plain.find("cudaMalloc 0\n"), std::string::npos) << "expected an error without a driver:\n" << plain;
    EXPECT_NE(hooked.find("events 0\n"), std::string::npos) << "nothing may be registered:\n" << hooked;
    // The hooks were on the real symbols (versioned libcudart.so.13).
    for (const char* sym : {"cudaMalloc", "cudaMallocHost", "cudaMallocManaged", "cudaFree", "cudaGetDriverEntryPoint"})
        EXPECT_NE(hooked.find(std::string("op patched <main> ") + sym + " libcudart.so.13\n"), std::string::npos)
            << sym << "\n"
            << hooked;
    EXPECT_EQ(hooked.find("op failed"), std::string::npos) << hooked;
}

}  // namespace

namespace {

TEST_F(HooksTest, preload_with_LDSHIM_CUDA_HOOKS_hooks_a_program_that_never_heard_of_ldshim) {
    SKIP_WITHOUT_CUDA_HOOKS();
    std::string dir = build({"partial_relro_pie_plt_gnu", "lazy", true, true, true, "gnu"});
    ASSERT_EQ(
        sh(FIXTURE_CC " -std=gnu11 -Wall -Werror -I" + quote(kFixtures) + " -I" + quote(LDSHIM_INCLUDE) + " -I" +
           quote(LDSHIM_GEN_INCLUDE) + " -o " + quote(dir + "/plain_app") + " " + quote(kFixtures + "/plain_app.c") +
           " -L" + quote(*root_) + " -l:libcudart.so.13 -Wl,-rpath," + quote(*root_) + " -ldl"),
        0);
    std::string app = quote(dir + "/plain_app") + " " + quote(dir + "/libconsumer2.so");
    std::string env = "LD_PRELOAD=" + quote(PRELOAD_LIB_PATH) +
                      " LDSHIM_CUDA_HOOKS=1 LDSHIM_HOOKS_LOG=" + quote(dir + "/preload.log") + " ";
    ASSERT_EQ(sh(env + app + " > " + quote(dir + "/preload.out") + " 2>&1"), 0) << read_file(dir + "/preload.out");
    std::string out = read_file(dir + "/preload.out");
    EXPECT_NE(out.find("direct 0 cuda\n"), std::string::npos) << out;
    EXPECT_NE(out.find("dlopened 0 cuda\n"), std::string::npos) << "a library dlopened later:\n" << out;
    std::string log = read_file(dir + "/preload.log");
    EXPECT_NE(log.find("patched\t<main program>\tcudaMalloc\tlibcudart.so.13\t"), std::string::npos) << log;
    EXPECT_NE(log.find("libconsumer2.so\tcudaMalloc\t"), std::string::npos) << log;
    // Without the variable the preload (which always brings libldshim.so.0,
    // for its dlopen hooks) installs no CUDA hook: nothing is registered.
    ASSERT_EQ(sh("LD_PRELOAD=" + quote(PRELOAD_LIB_PATH) + " " + app + " > " + quote(dir + "/off.out") + " 2>&1"), 0);
    EXPECT_NE(read_file(dir + "/off.out").find("direct 0 unregistered\n"), std::string::npos)
        << read_file(dir + "/off.out");

    // ldshim-hooks runs the same program and prints the log as a table.
    std::string tool = quote(HOOKS_TOOL) + " --preload " + quote(PRELOAD_LIB_PATH) + " -- ";
    ASSERT_EQ(sh(tool + app + " > " + quote(dir + "/tool.out") + " 2>&1"), 0) << read_file(dir + "/tool.out");
    std::string table = read_file(dir + "/tool.out");
    EXPECT_NE(table.find("STATUS"), std::string::npos) << table;
    EXPECT_NE(table.find("cudaMalloc"), std::string::npos) << table;
    EXPECT_NE(table.find(" 0 failed\n"), std::string::npos) << table;
    EXPECT_EQ(sh(tool + "false > /dev/null 2>&1"), 1) << "the command's exit status is passed on";
    EXPECT_EQ(sh(quote(HOOKS_TOOL) + " > /dev/null 2>&1"), 2) << "no command: usage error";
    EXPECT_EQ(sh(quote(HOOKS_TOOL) + " --bogus true > /dev/null 2>&1"), 2);
    EXPECT_EQ(sh(quote(HOOKS_TOOL) + " --preload /nonexistent -- true > /dev/null 2>&1"), 125);
    EXPECT_EQ(sh(quote(HOOKS_TOOL) + " --help | grep -q Usage"), 0);
}

}  // namespace

namespace {

TEST_F(HooksTest, stress_8_threads_10000_operations_with_a_fork_no_deadlock_no_leak) {
    SKIP_WITHOUT_CUDA_HOOKS();
    if (const char* emulator = ldshim::testmachine::emulator())
        GTEST_SKIP() << "SKIPPED: under " << emulator << ": valgrind cannot run an emulated program";
    std::string dir = build({"partial_relro_pie_plt_gnu", "lazy", true, true, true, "gnu"});
    std::string bin = dir + "/stress_fork";
    ASSERT_EQ(sh(FIXTURE_CC " -std=gnu11 -O1 -Wall -Werror -I" + quote(kFixtures) + " -I" + quote(LDSHIM_INCLUDE) +
                 " -I" + quote(LDSHIM_GEN_INCLUDE) + " -o " + quote(bin) + " " + quote(kFixtures + "/stress_fork.c") +
                 " -L" + quote(*root_) + " -l:libcudart.so.13 -L" + quote(LDSHIM_LIBDIR) + " -lldshim -Wl,-rpath," +
                 quote(*root_ + ":" + LDSHIM_LIBDIR) + " -lpthread -ldl"),
              0);
    // The program's own watchdog (alarm) fails it on a deadlock; timeout is a
    // second line of defence.
    int rc = sh("timeout 300 " + quote(bin) + " " + quote(dir) + " 8 10000 > " + quote(dir + "/stress.out") + " 2>&1");
    std::string out = read_file(dir + "/stress.out");
    EXPECT_EQ(rc, 0) << out;
    EXPECT_NE(out.find("threads 8 ops 10000 "), std::string::npos) << out;
    EXPECT_NE(out.find(" bad 0\n"), std::string::npos) << out;
    EXPECT_NE(out.find("ops after fork, 0 bad"), std::string::npos) << "the forked child kept working\n" << out;
    if (sh("command -v valgrind > /dev/null") != 0) {
        std::printf("SKIPPED: the leak check needs valgrind\n");
        return;
    }
    // The same, smaller, under valgrind: no definite leak, no memory error.
    // glibc's own search code has a report of its own: tests/hooks/fixtures/ld_so.supp.
    rc =
        sh("timeout 300 valgrind -q --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=99 "
           "--suppressions=" +
           quote(kFixtures + "/ld_so.supp") + " " + quote(bin) + " " + quote(dir) + " 8 300 > " +
           quote(dir + "/valgrind.out") + " 2>&1");
    EXPECT_EQ(rc, 0) << read_file(dir + "/valgrind.out");
}

}  // namespace
