// A preload is a guest in someone else's process: with libldshim_preload.so
// the process starts no program and no process, opens no file for writing
// that it would not open without ldshim, and a host that reaps every child
// or forbids execve sees exactly what it sees without ldshim.
#include "interposers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

using namespace ldshim::difftest;

namespace {

std::string build_guest(Tree& t) {
    std::string bin = t.abs("guest");
    EXPECT_EQ(sh("cc -O1 -o " + quote(bin) + " " + quote(std::string(FIXTURE_DIR) + "/guest.c") + " -ldl"), 0);
    return bin;
}

struct Trace {
    int processes = 0;                // clone/fork/vfork/execve calls
    std::set<std::string> written;    // files opened for writing
};

// What `cmd` did, by strace, with or without the preload.
Trace traced(Tree& t, const std::string& cmd, bool with_ldshim) {
    std::string log = t.abs(with_ldshim ? ".out/strace-ldshim" : ".out/strace-plain");
    std::string env = with_ldshim ? "LD_PRELOAD=" + quote(PRELOAD_LIB_PATH) + " " : std::string();
    sh("strace -f -qq -o " + quote(log) +
       " -e trace=execve,execveat,clone,clone3,fork,vfork,open,openat,creat env " + env + cmd + " > /dev/null 2>&1");
    Trace tr;
    auto has = [](const std::string& l, const char* s) { return l.find(s) != std::string::npos; };
    for (const auto& l : read_lines(log)) {
        if (has(l, "execve(") || has(l, "clone(") || has(l, "clone3(") || has(l, "fork(")) ++tr.processes;
        // A successful open(at) or creat for writing: note the file's name.
        bool opens = has(l, "open(") || has(l, "openat(") || has(l, "creat(");
        bool writing = has(l, "O_WRONLY") || has(l, "O_RDWR") || has(l, "O_CREAT") || has(l, "creat(");
        auto q1 = l.find('"'), q2 = q1 == std::string::npos ? q1 : l.find('"', q1 + 1);
        if (opens && writing && !has(l, " = -1 ") && q2 != std::string::npos)
            tr.written.insert(l.substr(q1 + 1, q2 - q1 - 1));
    }
    return tr;
}

}  // namespace

TEST(Guest, a_preloaded_process_starts_nothing_and_writes_nothing_of_its_own) {
    if (sh("command -v strace > /dev/null") != 0) GTEST_SKIP() << "SKIPPED: strace is not installed";
    Tree t;
    std::string guest = build_guest(t);
    const std::vector<std::string> commands = {
        quote(guest) + " reap libz.so.1",
        "/usr/bin/python3 -c 'import ctypes, ssl, sqlite3; ctypes.CDLL(\"libz.so.1\")'",
    };
    for (const auto& cmd : commands) {
        Trace plain = traced(t, cmd, false), ldshim = traced(t, cmd, true);
        ASSERT_GT(plain.processes, 0) << "strace saw nothing: " << cmd;
        EXPECT_EQ(ldshim.processes, plain.processes) << "processes started: " << cmd;
        std::vector<std::string> extra;
        std::set_difference(ldshim.written.begin(), ldshim.written.end(), plain.written.begin(), plain.written.end(),
                            std::back_inserter(extra));
        EXPECT_TRUE(extra.empty()) << cmd << " opened for writing with ldshim only: "
                                   << ::testing::PrintToString(extra);
        std::printf("[ GUEST    ] %-60.60s processes %d/%d, files written %zu/%zu\n", cmd.c_str(), plain.processes,
                    ldshim.processes, plain.written.size(), ldshim.written.size());
    }
}

TEST(Guest, a_host_that_reaps_every_child_or_forbids_execve_sees_no_difference) {
    Tree t;
    std::string guest = build_guest(t);
    for (const char* mode : {"reap", "seccomp"}) {
        std::string out = t.abs(".out/guest");
        std::string cmd = quote(guest) + " " + mode + " libz.so.1";
        ASSERT_EQ(sh(cmd + " > " + quote(out) + " 2>&1"), 0) << read_file(out);
        std::string plain = read_file(out);
        ASSERT_EQ(sh("env LD_PRELOAD=" + quote(PRELOAD_LIB_PATH) + " " + cmd + " > " + quote(out) + " 2>&1"), 0)
            << read_file(out);
        std::string with = read_file(out);
        EXPECT_EQ(with, plain) << mode;
        EXPECT_NE(with.find("libz.so.1 loaded"), std::string::npos) << with;
        if (std::string(mode) == "reap") {
            EXPECT_NE(with.find("reaped 1, strangers 0, SIGCHLD 1"), std::string::npos) << with;
        }
    }
}
