// A preload is a guest in someone else's process: with libldshim_preload.so
// the process starts no program and no process, opens no file for writing
// that it would not open without ldshim, and a host that reaps every child
// or forbids execve sees exactly what it sees without ldshim.
#include "../support/test_machine.h"
#include "fixture_cc.h"
#include "interposers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <string>
#include <utility>
#include <vector>

using namespace ldshim::difftest;

namespace {

std::string build_guest(Tree& t) {
    std::string bin = t.abs("guest");
    EXPECT_EQ(sh(FIXTURE_CC " -O1 -o " + quote(bin) + " " + quote(std::string(FIXTURE_DIR) + "/guest.c") + " -ldl"), 0);
    return bin;
}

struct Trace {
    int processes = 0;              // clone/fork/vfork/execve calls
    std::set<std::string> written;  // files opened for writing
};

// What `cmd` did, by strace, with or without the preload.
Trace traced(Tree& t, const std::string& cmd, bool with_ldshim) {
    std::string log = t.abs(with_ldshim ? ".out/strace-ldshim" : ".out/strace-plain");
    std::string env = with_ldshim ? "LD_PRELOAD=" + quote(PRELOAD_LIB_PATH) + " " : std::string();
    sh("strace -f -qq -o " + quote(log) + " -e trace=execve,execveat,clone,clone3,fork,vfork,open,openat,creat env " +
       env + cmd + " > /dev/null 2>&1");
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
        EXPECT_TRUE(extra.empty()) << cmd
                                   << " opened for writing with ldshim only: " << ::testing::PrintToString(extra);
        std::printf("[ GUEST    ] %-60.60s processes %d/%d, files written %zu/%zu\n", cmd.c_str(), plain.processes,
                    ldshim.processes, plain.written.size(), ldshim.written.size());
    }
}

TEST(Guest, a_host_that_reaps_every_child_or_forbids_execve_sees_no_difference) {
    if (const char* emulator = ldshim::testmachine::emulator())
        GTEST_SKIP() << "SKIPPED: under " << emulator << ": the guest cannot install a seccomp filter";
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

namespace {

// "lock_probe: N allocations probed, M under the loader's lock" -> {N, M}.
std::pair<long, long> probe_counts(const std::string& out) {
    auto at = out.find("lock_probe: ");
    long probed = -1, under = -1;
    if (at != std::string::npos)
        std::sscanf(out.c_str() + at, "lock_probe: %ld allocations probed, %ld", &probed, &under);
    return {probed, under};
}

}  // namespace

// glibc holds its loader lock around every dl_iterate_phdr callback, and
// other threads' walks wait for it.  An allocation inside the callback
// reaches whatever malloc the process has: heaptrack's unwinds the stack
// under libunwind's mutex, which heaptrack's other thread holds while it
// waits for the walk, and the process hangs.  lock_probe.c catches every
// allocation made under that lock; ldshim must make none, in any of its
// walks (hook passes, the resolver's reconciliation, uninstall).
TEST(Guest, nothing_is_allocated_while_the_loader_lock_is_held) {
    Tree t;
    std::string probe = t.abs("lock_probe.so"), walks = t.abs("walks");
    ASSERT_EQ(sh(FIXTURE_CC " -O1 -shared -fPIC -o " + quote(probe) + " " +
                 quote(std::string(FIXTURE_DIR) + "/lock_probe.c") + " -lpthread"),
              0);
    ASSERT_EQ(sh(FIXTURE_CC " -O1 -o " + quote(walks) + " " + quote(std::string(FIXTURE_DIR) + "/walks.c") + " -ldl"),
              0);
    std::string out = t.abs(".out/probe");
    auto run = [&](const std::string& env, const std::string& cmd) {
        int rc = sh("env " + env + " " + cmd + " > " + quote(out) + " 2>&1");
        return std::make_pair(rc, read_file(out));
    };
    // The probe itself: it must see an allocation made inside a callback.
    auto [self_rc, self] = run("LD_PRELOAD=" + quote(probe), quote(walks) + " self-test");
    ASSERT_EQ(self_rc, 0) << self;
    ASSERT_GE(probe_counts(self).second, 1) << "the probe missed an allocation under the lock:\n" << self;

    const std::string preload = "LD_PRELOAD=" + quote(probe + " " + PRELOAD_LIB_PATH) + " LOCK_PROBE_ONLY=libldshim";
    struct Case {
        const char* label;
        std::string env, cmd;
    };
    const std::vector<Case> cases = {
        {"walks.c, dlopen hooks", preload, quote(walks)},
        {"walks.c, dlopen and CUDA hooks", preload + " LDSHIM_CUDA_HOOKS=1", quote(walks)},
        {"python3, dlopen and CUDA hooks", preload + " LDSHIM_CUDA_HOOKS=1",
         "/usr/bin/python3 -c 'import ssl, sqlite3, ctypes, lzma, bz2, curses; ctypes.CDLL(\"libz.so.1\")'"},
    };
    for (const auto& [label, env, cmd] : cases) {
        if (cmd.starts_with("/usr/bin/python3") && !ldshim::testmachine::for_this_machine("/usr/bin/python3")) {
            std::printf("[ LOCK     ] %-34s SKIPPED: /usr/bin/python3 is not for %s\n", label,
                        std::string(ldshim::testmachine::kThis.triplet).c_str());
            continue;
        }
        auto [rc, text] = run(env, cmd);
        auto [probed, under] = probe_counts(text);
        EXPECT_EQ(rc, 0) << cmd << "\n" << text;
        EXPECT_GT(probed, 0) << "nothing probed -- is libldshim loaded?\n" << text;
        EXPECT_EQ(under, 0) << env << " " << cmd << "\n" << text;
        std::printf("[ LOCK     ] %-32s %ld allocations by libldshim, %ld under the loader lock\n", label, probed,
                    under);
    }
}

// A call ldshim does not answer -- switched off, or a process it declines to
// model (started as `ld.so PROGRAM`) -- goes on to glibc from its own caller:
// the preload's entries jump rather than call, so glibc searches the
// caller's RUNPATH exactly as without ldshim.
TEST(Guest, a_call_ldshim_does_not_answer_is_searched_from_its_own_caller) {
    Tree t;
    std::string dir = t.abs("plug");
    ASSERT_EQ(sh("sh " + quote(std::string(FIXTURE_DIR) + "/plug_tree.sh") + " " + quote(dir)), 0);
    std::string out = t.abs(".out/run");
    auto run = [&](const std::string& env, const std::string& how) {
        sh("env " + env + " " + how + quote(dir + "/prog") + " > " + quote(out) + " 2>&1");
        return read_file(out);
    };
    const std::string loaded = "loaded lib/plug/libplug.so\n";
    const std::string preload = "LD_PRELOAD=" + quote(PRELOAD_LIB_PATH);
    const std::string ld_so = ldshim::testmachine::loader() + " ";
    ASSERT_EQ(run("", ""), loaded) << "the layout itself";
    ASSERT_EQ(run("", ld_so), loaded) << "the layout under an explicit loader";
    EXPECT_EQ(run(preload, ""), loaded);
    EXPECT_EQ(run(preload + " LDSHIM_DISABLE=1", ""), loaded) << "switched off";
    EXPECT_EQ(run(preload + " LDSHIM_DISABLE=1 LDSHIM_CUDA_HOOKS=1", ""), loaded) << "switched off, CUDA hooks asked";
    EXPECT_EQ(run(preload, ld_so), loaded) << "declined: ld.so PROGRAM";
    // That last case is ldshim declining, not answering.
    std::string debug = run(preload + " LDSHIM_DEBUG=1", ld_so);
    EXPECT_NE(debug.find("unresolved (passed on)"), std::string::npos) << debug;
    EXPECT_NE(debug.find(loaded), std::string::npos) << debug;

    // dlmopen's entries too: the same library opened into a new namespace.
    t.write("m.c",
            "#define _GNU_SOURCE\n#include <dlfcn.h>\n#include <stdio.h>\n"
            "int host_load(void) {\n"
            "  void* h = dlmopen(LM_ID_NEWLM, \"libplug.so\", RTLD_NOW);\n"
            "  if (!h) { printf(\"ERROR %s\\n\", dlerror()); return 1; }\n"
            "  printf(\"loaded lib/plug/libplug.so\\n\");\n  return 0;\n}\n");
    ASSERT_EQ(sh(FIXTURE_CC " -shared -fPIC -o " + quote(dir + "/lib/libhost.so") + " " + quote(t.abs("m.c")) +
                 " -ldl -Wl,--enable-new-dtags -Wl,-rpath,'$ORIGIN/plug'"),
              0);
    ASSERT_EQ(run("", ""), loaded) << "the dlmopen layout itself";
    EXPECT_EQ(run(preload, ""), loaded);
    EXPECT_EQ(run(preload + " LDSHIM_DISABLE=1", ""), loaded) << "dlmopen, switched off";
    EXPECT_EQ(run(preload, ld_so), loaded) << "dlmopen, declined: ld.so PROGRAM";
}

// The preload reaches libldshim through one table (lib/preload_ops.h).  Met
// by a libldshim.so.0 of an older release, whose table is shorter than the
// preload knows (another install's library, found first), it passes every
// call through: the process runs as without ldshim.
TEST(Guest, a_preload_met_by_an_older_library_passes_every_call_through) {
    Tree t;
    std::string dir = t.abs("plug");
    ASSERT_EQ(sh("sh " + quote(std::string(FIXTURE_DIR) + "/plug_tree.sh") + " " + quote(dir)), 0);
    // The fields every release has: the size, then glibc's dlsym and dlvsym.
    t.write("old/ops.c",
            "#define _GNU_SOURCE\n#include <dlfcn.h>\n#include <stddef.h>\n"
            "typedef void* (*dlsym_fn)(void*, const char*);\n"
            "typedef void* (*dlvsym_fn)(void*, const char*, const char*);\n"
            "static dlsym_fn get_dlsym(void) { return dlsym; }\n"
            "static dlvsym_fn get_dlvsym(void) { return dlvsym; }\n"
            "struct ops { size_t size; dlsym_fn (*dlsym)(void); dlvsym_fn (*dlvsym)(void); };\n"
            "static const struct ops old = { sizeof old, get_dlsym, get_dlvsym };\n"
            "const struct ops* ldshim_get_preload_ops(void) { return &old; }\n");
    t.write("old/ops.map", "LDSHIM_0 { local: *; };\nLDSHIM_PRIVATE { global: ldshim_get_preload_ops; } LDSHIM_0;\n");
    ASSERT_EQ(
        sh(FIXTURE_CC " -shared -fPIC -o " + quote(t.abs("old/libldshim.so.0")) + " " + quote(t.abs("old/ops.c")) +
           " -Wl,-soname,libldshim.so.0 -Wl,--version-script=" + quote(t.abs("old/ops.map")) + " -ldl"),
        0);
    std::string out = t.abs(".out/run");
    auto run = [&](const std::string& env) {
        int rc = sh("env " + env + " " + quote(dir + "/prog") + " > " + quote(out) + " 2>&1");
        return std::to_string(rc) + ": " + read_file(out);
    };
    const std::string loaded = "0: loaded lib/plug/libplug.so\n";
    ASSERT_EQ(run(""), loaded) << "the layout itself";
    const std::string old = "LD_LIBRARY_PATH=" + quote(t.abs("old")) + " LD_PRELOAD=" + quote(PRELOAD_LIB_PATH);
    EXPECT_EQ(run(old), loaded);
    EXPECT_EQ(run(old + " LDSHIM_DEBUG=1"), loaded) << "no libldshim of this release: nothing of its own to say";
}

// The preload hands dlerror and __libc_start_main on to the next definition
// (RTLD_NEXT).  Where libldshim's pass saw nothing but libc define them it
// takes libc's own without asking dlsym (hooks/patcher.h: libc_next); a
// preload after it that defines them still gets the calls, and dlerror
// asked before the process's first dlopen still reports a failed dlsym.
TEST(Guest, dlerror_and_libc_start_main_go_on_to_the_next_definition_after_the_preload) {
    Tree t;
    t.write("wrap.c",
            "#define _GNU_SOURCE\n#include <dlfcn.h>\n#include <stdio.h>\n"
            "typedef int (*start_fn)(int (*)(int, char**, char**), int, char**, void (*)(void), void (*)(void),\n"
            "                        void (*)(void), void*);\n"
            "static char* (*next_dlerror)(void);\n"
            "__attribute__((constructor)) static void init(void) {\n"
            "  next_dlerror = (char* (*)(void))dlsym(RTLD_NEXT, \"dlerror\");\n}\n"
            "char* dlerror(void) {\n"
            "  static char buf[512];\n"
            "  char* e = next_dlerror ? next_dlerror() : 0;\n"
            "  if (!e) return 0;\n"
            "  snprintf(buf, sizeof buf, \"wrapped: %s\", e);\n  return buf;\n}\n"
            "int __libc_start_main(int (*m)(int, char**, char**), int argc, char** argv, void (*i)(void),\n"
            "                      void (*f)(void), void (*r)(void), void* s) {\n"
            "  start_fn next = (start_fn)dlsym(RTLD_NEXT, \"__libc_start_main\");\n"
            "  puts(\"wrapped start\");\n"
            "  return next(m, argc, argv, i, f, r, s);\n}\n");
    t.write("prog.c",
            "#define _GNU_SOURCE\n#include <dlfcn.h>\n#include <stdio.h>\n"
            "int main(void) {\n"
            "  void* s = dlsym(RTLD_DEFAULT, \"no_such_symbol_anywhere\");\n"
            "  const char* e = dlerror();\n"
            "  printf(\"%s\\n\", s ? \"found\" : e ? e : \"no error\");\n  return 0;\n}\n");
    ASSERT_EQ(sh(FIXTURE_CC " -shared -fPIC -o " + quote(t.abs("libwrap.so")) + " " + quote(t.abs("wrap.c")) + " -ldl"),
              0);
    ASSERT_EQ(sh(FIXTURE_CC " -o " + quote(t.abs("prog")) + " " + quote(t.abs("prog.c")) + " -ldl"), 0);
    std::string out = t.abs(".out/run");
    auto run = [&](const std::string& preload) {
        int rc = sh("env LD_PRELOAD=" + quote(preload) + " " + quote(t.abs("prog")) + " > " + quote(out) + " 2>&1");
        return std::to_string(rc) + ": " + read_file(out);
    };
    const std::string wrap = t.abs("libwrap.so");
    const std::string wrapped = run(wrap);
    ASSERT_NE(wrapped.find("wrapped start\nwrapped: "), std::string::npos) << "the layout itself: " << wrapped;
    ASSERT_NE(wrapped.find("no_such_symbol_anywhere"), std::string::npos) << wrapped;
    const std::string plain = run("");
    ASSERT_NE(plain.find("no_such_symbol_anywhere"), std::string::npos) << plain;
    EXPECT_EQ(run(PRELOAD_LIB_PATH), plain) << "only libc defines them";
    EXPECT_EQ(run(std::string(PRELOAD_LIB_PATH) + ":" + wrap), wrapped) << "a preload after ldshim defines them";
}

// libldshim links no start files (lib/start_files.cc): a program that loads
// it with dlopen and unloads it with dlclose still gets its destructors run
// and its fork handler removed before its code goes, as crtbeginS.o's entry
// did.  A fork after the dlclose would otherwise call into unmapped memory.
TEST(Guest, libldshim_unloaded_by_dlclose_leaves_no_fork_handler_behind) {
    Tree t;
    t.write("unload.c", R"(#include <dlfcn.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char** argv) {
    for (int i = 0; i < 3; ++i) {
        void* h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
        if (!h || !dlsym(h, "ldshim_strerror")) { printf("dlopen: %s\n", dlerror()); return 1; }
        if (dlclose(h) != 0) { printf("dlclose: %s\n", dlerror()); return 1; }
        if (dlopen(argv[1], RTLD_NOW | RTLD_NOLOAD)) { printf("still loaded after dlclose\n"); return 1; }
    }
    pid_t p = fork();
    if (p == 0) _exit(7);
    int st = 0;
    if (p < 0 || waitpid(p, &st, 0) != p) { printf("no child\n"); return 1; }
    printf("child %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    return 0;
}
)");
    std::string bin = t.abs("unload");
    ASSERT_EQ(sh(FIXTURE_CC " -o " + quote(bin) + " " + quote(t.abs("unload.c")) + " -ldl"), 0);
    std::string out = t.abs(".out/unload");
    int rc = sh(quote(bin) + " " + quote(LDSHIM_LIB_PATH) + " > " + quote(out) + " 2>&1");
    EXPECT_EQ(std::to_string(rc) + ": " + read_file(out), "0: child 7\n");
}
