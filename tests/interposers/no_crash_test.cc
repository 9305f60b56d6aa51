// A preload is a guest: with a real dlopen interposer in the process (the
// sanitizer runtimes of gcc and clang, preloaded into programs that were not
// built with them), adding libldshim_preload.so before or after it changes
// neither the exit status nor the output of /bin/true, python3 importing
// ssl/sqlite3/ctypes, or a program that dlopens and dlcloses in 4 threads.
// (ldshim once died there with recursive_init_error: the sanitizer's start-up
// called back into ldshim while ldshim's own first call was setting up.)
#include "../support/test_machine.h"
#include "fixture_cc.h"
#include "interposers.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace ldshim::difftest;

namespace {

struct Runtime {
    std::string name;
    std::string path;  // empty: not installed here
};

// The runtime shared objects as their users find them: the compiler says where.
std::string runtime_path(const std::string& command) {
    Tree t;
    std::string out = t.abs(".out/rt");
    if (sh(command + " > " + quote(out) + " 2>/dev/null") != 0) return {};
    auto lines = read_lines(out);
    if (lines.empty() || lines[0].empty() || lines[0][0] != '/') return {};
    return sh("test -f " + quote(lines[0])) == 0 ? lines[0] : std::string();
}

std::vector<Runtime> runtimes() {
    return {
        {"gcc-asan", runtime_path("readlink -f \"$(gcc -print-file-name=libasan.so)\"")},
        {"gcc-tsan", runtime_path("readlink -f \"$(gcc -print-file-name=libtsan.so)\"")},
        {"clang-asan", runtime_path("clang -print-file-name=libclang_rt.asan-" +
                                    std::string(ldshim::testmachine::kThis.clang_rt_arch) + ".so")},
        {"clang-tsan", runtime_path("clang -print-file-name=libclang_rt.tsan-" +
                                    std::string(ldshim::testmachine::kThis.clang_rt_arch) + ".so")},
    };
}

struct Outcome {
    int status;
    std::string output;
};

// Runs `cmd` with LD_PRELOAD=`preload`; stdout only (sanitizers report on stderr).
Outcome run(Tree& t, const std::string& preload, const std::string& cmd) {
    std::string out = t.abs(".out/run");
    // The runtimes check that they come first; "ldshim first" is a legitimate
    // order only with that check off.  Leak reports describe the programs,
    // not the preload, and are switched off on both sides.
    std::string env =
        "ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0 TSAN_OPTIONS=report_bugs=0 LD_PRELOAD=" + quote(preload);
    int rc =
        sh("cd " + quote(t.abs(".")) + " && env " + env + " timeout 120 " + cmd + " > " + quote(out) + " 2>/dev/null");
    return {rc, read_file(out)};
}

// The 4-thread dlopen/dlclose program, built into the tree; "" on failure.
std::string build_threads(Tree& t) {
    std::string bin = t.abs("dlopen_threads");
    int rc = sh(FIXTURE_CC " -O1 -o " + quote(bin) + " " + quote(std::string(FIXTURE_DIR) + "/dlopen_threads.c") +
                " -pthread -ldl");
    return rc == 0 ? bin : std::string();
}

TEST(Interposers, every_sanitizer_runtime_with_ldshim_before_and_after_it_behaves_as_without_ldshim) {
    Tree t;
    std::string threads = build_threads(t);
    ASSERT_FALSE(threads.empty());
    const std::vector<std::string> programs = {
        "/bin/true",
        "/usr/bin/python3 -c 'import ssl, sqlite3, ctypes; print(ssl.OPENSSL_VERSION_NUMBER > 0, "
        "sqlite3.sqlite_version)'",
        quote(threads),
    };
    int tried = 0;
    for (const auto& rt : runtimes()) {
        if (rt.path.empty()) {
            std::printf("[ SKIPPED  ] %s: runtime not installed\n", rt.name.c_str());
            continue;
        }
        for (const auto& prog : programs) {
            Outcome alone = run(t, rt.path, prog);
            if (alone.status != 0) {
                // clang 14's TSan runtime, and gcc 12's under python3, crash on
                // their own when preloaded here: nothing to compare ldshim with.
                std::printf("[ SKIPPED  ] %-10s %-60.60s the runtime alone exits %d\n", rt.name.c_str(), prog.c_str(),
                            alone.status);
                continue;
            }
            Outcome last = run(t, rt.path + ":" + PRELOAD_LIB_PATH, prog);
            Outcome first = run(t, std::string(PRELOAD_LIB_PATH) + ":" + rt.path, prog);
            EXPECT_EQ(last.status, alone.status) << rt.name << ", ldshim last: " << prog;
            EXPECT_EQ(last.output, alone.output) << rt.name << ", ldshim last: " << prog;
            EXPECT_EQ(first.status, alone.status) << rt.name << ", ldshim first: " << prog;
            EXPECT_EQ(first.output, alone.output) << rt.name << ", ldshim first: " << prog;
            std::printf("[ RUN      ] %-10s %-60.60s exit %d/%d/%d\n", rt.name.c_str(), prog.c_str(), alone.status,
                        last.status, first.status);
            ++tried;
        }
    }
    if (tried == 0) GTEST_SKIP() << "SKIPPED: no sanitizer runtime installed (gcc, clang)";
}

// The same for tools that wrap a program (`TOOL prog`), with ldshim already
// in LD_PRELOAD: the same exit status, and the program's own output still
// there (the tools add lines of their own, with process ids).
TEST(Interposers, every_wrapping_tool_with_ldshim_in_ld_preload_behaves_as_without_ldshim) {
    if (const char* emulator = ldshim::testmachine::emulator())
        GTEST_SKIP() << "SKIPPED: under " << emulator
                     << ": the wrapping tools are this machine's programs (tests/arm64/tools_test.sh runs arm64 ones)";
    Tree t;
    std::string threads = build_threads(t);
    ASSERT_FALSE(threads.empty());
    struct Case {
        std::string program, expect;
    };
    const std::vector<Case> programs = {
        {"/bin/true", ""},
        {"/usr/bin/python3 -c 'import ssl, sqlite3, ctypes; print(\"imported\")'", "imported"},
        {quote(threads), "of 800"},
    };
    const std::vector<std::string> tools = {"fakechroot", "heaptrack -o " + quote(t.abs("heaptrack"))};
    int tried = 0;
    for (const auto& tool : tools) {
        if (sh("command -v " + tool.substr(0, tool.find(' ')) + " > /dev/null") != 0) {
            std::printf("[ SKIPPED  ] %s: not installed\n", tool.c_str());
            continue;
        }
        for (const auto& p : programs) {
            // heaptrack records a stack per allocation: the 800 dlopen/dlclose
            // of the threads program take minutes under it.  (The deadlock
            // that once hid here has its own test: Guest.nothing_is_allocated_
            // while_the_loader_lock_is_held, and scripts/heaptrack-loop.sh.)
            if (tool.starts_with("heaptrack") && p.program == quote(threads)) {
                std::printf("[ SKIPPED  ] %s %s: too slow under heaptrack for CI\n", tool.c_str(), p.program.c_str());
                continue;
            }
            std::string out = t.abs(".out/tool");
            int alone = sh("timeout 120 " + tool + " " + p.program + " > " + quote(out) + " 2>/dev/null");
            std::string alone_out = read_file(out);
            int with = sh("timeout 120 env LD_PRELOAD=" + quote(PRELOAD_LIB_PATH) + " " + tool + " " + p.program +
                          " > " + quote(out) + " 2>/dev/null");
            std::string with_out = read_file(out);
            EXPECT_EQ(with, alone) << tool << " " << p.program;
            if (!p.expect.empty()) {
                EXPECT_NE(alone_out.find(p.expect), std::string::npos) << tool << " alone: " << alone_out;
                EXPECT_NE(with_out.find(p.expect), std::string::npos) << tool << " with ldshim: " << with_out;
            }
            std::printf("[ RUN      ] %-30.30s %-40.40s exit %d/%d\n", tool.c_str(), p.program.c_str(), alone, with);
            ++tried;
        }
    }
    if (tried == 0) GTEST_SKIP() << "SKIPPED: fakechroot is not installed";
}

}  // namespace
