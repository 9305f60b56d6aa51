// The dlopen interposers people run, from Debian's packages, each started
// the way its users start it, on the bug's smallest case: lib/libhost.so
// (RUNPATH $ORIGIN/plug) dlopens "libplug.so", which lives only in
// lib/plug/.  For every interposer the test first proves the bug (without
// ldshim the load fails: glibc searched from the interposer's library), then
// that ldshim repairs it in each order that makes sense for that tool:
//   first    ldshim before the tool in LD_PRELOAD
//   last     ldshim after it (ASan demands its runtime first)
//   wrapper  ldshim already in LD_PRELOAD when the user runs `TOOL prog`
// and that the tool is still active (its library mapped in the program).  Each row is printed as a line of the
// table in docs/interposers.md.
#include "../support/test_machine.h"
#include "interposers.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace ldshim::difftest;

namespace {

const std::string kPreload = PRELOAD_LIB_PATH;

std::string first_line(Tree& t, const std::string& cmd) {
    std::string out = t.abs(".out/line");
    if (sh(cmd + " > " + quote(out) + " 2>/dev/null") != 0) return {};
    auto lines = read_lines(out);
    return lines.empty() ? std::string() : lines[0];
}

std::string package_version(Tree& t, const std::string& pkg) {
    std::string v = first_line(t, "dpkg-query -W -f='${Version}\\n' " + pkg);
    return pkg + " " + (v.empty() ? "?" : v);
}

// The case, built with `flags` (a sanitizer, -pg, or nothing).
void build_case(Tree& t, const std::string& dir, const std::string& cc, const std::string& flags) {
    t.write(dir + "/plug.c", "int plug(void) { return 7; }\n");
    t.write(dir + "/host.c",
            "#include <dlfcn.h>\n#include <stdio.h>\n"
            "int host_load(void) {\n"
            "    void *h = dlopen(\"libplug.so\", RTLD_NOW);\n"
            "    if (!h) { printf(\"ERROR %s\\n\", dlerror()); return 1; }\n"
            "    printf(\"loaded\\n\");\n"
            "    return 0;\n}\n");
    // main also lists every object mapped (some tools clear LD_PRELOAD).
    t.write(dir + "/main.c",
            "#define _GNU_SOURCE\n#include <link.h>\n#include <stdio.h>\n"
            "int host_load(void);\n"
            "static int show(struct dl_phdr_info *i, size_t n, void *p) {\n"
            "    (void)n; (void)p; printf(\"MAPPED %s\\n\", i->dlpi_name); return 0;\n}\n"
            "int main(void) {\n"
            "    int rc = host_load();\n"
            "    dl_iterate_phdr(show, NULL);\n"
            "    return rc;\n}\n");
    std::string d = quote(t.abs(dir));
    std::string cmd = "cd " + d + " && mkdir -p lib/plug && " + cc +
                      " -shared -fPIC -o lib/plug/libplug.so plug.c && " + cc + " " + flags +
                      " -O0 -shared -fPIC -o lib/libhost.so host.c -ldl -Wl,--enable-new-dtags " +
                      "-Wl,-rpath,'$ORIGIN/plug' && " + cc + " " + flags + " -O0 -o prog main.c -Llib -lhost " +
                      "-Wl,-rpath,'$ORIGIN/lib'";
    ASSERT_EQ(sh(cmd), 0) << cmd;
}

struct Run {
    bool ran = false;  // the program printed its lines
    bool loaded = false;
    std::string mapped;  // every object the process had mapped, one a line
};

Run run(Tree& t, const std::string& dir, const std::string& cmd) {
    std::string out = t.abs(".out/run");
    sh("cd " + quote(t.abs(dir)) + " && timeout 120 " + cmd + " > " + quote(out) + " 2>/dev/null");
    Run r;
    for (const auto& l : read_lines(out)) {
        if (l == "loaded") r.loaded = r.ran = true;
        if (l.starts_with("ERROR ")) r.ran = true;
        if (l.starts_with("MAPPED ")) r.mapped += l.substr(7) + "\n";
    }
    return r;
}

const char* verdict(const Run& r) { return !r.ran ? "did not run" : r.loaded ? "repaired" : "fails"; }

// One interposer: the bug without ldshim, then each order given.
struct Row {
    std::string name, package;
    std::string without;                                    // the command without ldshim
    std::vector<std::pair<std::string, std::string>> with;  // order -> command with ldshim
    std::string active;                                     // a library that must be mapped (the tool is on)
};

void check_row(Tree& t, const std::string& dir, const Row& row) {
    Run bug = run(t, dir, row.without);
    std::string line = "| " + row.name + " | " + row.package + " | " + verdict(bug) + " |";
    ASSERT_TRUE(bug.ran) << row.name << ": the program does not run with the tool alone: " << row.without;
    EXPECT_FALSE(bug.loaded) << row.name << ": without ldshim the bug does not show";
    for (const auto& [order, cmd] : row.with) {
        Run fixed = run(t, dir, cmd);
        EXPECT_TRUE(fixed.loaded) << row.name << ", ldshim " << order << ": " << cmd;
        EXPECT_NE(fixed.mapped.find(kPreload), std::string::npos) << row.name << ": ldshim not preloaded";
        if (!row.active.empty()) {
            EXPECT_NE(fixed.mapped.find(row.active), std::string::npos) << row.name << ": the tool is not active";
        }
        line += " " + order + ": " + verdict(fixed) + " |";
    }
    std::printf("[ TABLE    ] %s\n", line.c_str());
}

std::string runtime(Tree& t, const std::string& query) {
    std::string p = first_line(t, query);
    return !p.empty() && p[0] == '/' && sh("test -f " + quote(p)) == 0 ? p : std::string();
}

}  // namespace

TEST(RealInterposers, programs_built_with_a_sanitizer_find_their_runpath_library_with_ldshim) {
    if (const char* emulator = ldshim::testmachine::emulator())
        GTEST_SKIP() << "SKIPPED: under " << emulator
                     << ": these tools are this machine's (tests/arm64/interposers_test.sh, tools_test.sh run arm64's)";
    Tree t;
    std::string gasan = runtime(t, "readlink -f \"$(gcc -print-file-name=libasan.so)\"");
    std::string gtsan = runtime(t, "readlink -f \"$(gcc -print-file-name=libtsan.so)\"");
    const std::string pre = "env LD_PRELOAD=";
    build_case(t, "gcc-asan", "gcc", "-fsanitize=address");
    check_row(
        t, "gcc-asan",
        {"gcc -fsanitize=address",
         package_version(t, "libasan8"),
         "env ASAN_OPTIONS=detect_leaks=0 ./prog",
         {{"first", "env ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0 LD_PRELOAD=" + kPreload + " ./prog"},
          {"last", "env ASAN_OPTIONS=detect_leaks=0 LD_PRELOAD=" + gasan + ":" + kPreload + " ./prog"}},
         ""});
    build_case(t, "gcc-tsan", "gcc", "-fsanitize=thread");
    check_row(t, "gcc-tsan",
              {"gcc -fsanitize=thread",
               package_version(t, "libtsan2"),
               "./prog",
               {{"first", pre + kPreload + " ./prog"}, {"last", pre + gtsan + ":" + kPreload + " ./prog"}},
               ""});
    build_case(t, "clang-asan", "clang", "-fsanitize=address");
    // clang links its runtime into the program: only ldshim's own place is chosen.
    check_row(t, "clang-asan",
              {"clang -fsanitize=address",
               package_version(t, "libclang-rt-14-dev"),
               "env ASAN_OPTIONS=detect_leaks=0 ./prog",
               {{"first", "env ASAN_OPTIONS=detect_leaks=0 LD_PRELOAD=" + kPreload + " ./prog"}},
               ""});
    build_case(t, "clang-tsan", "clang", "-fsanitize=thread");
    if (!run(t, "clang-tsan", "./prog").ran)
        std::printf(
            "[ SKIPPED  ] clang -fsanitize=thread: the program does not run here even alone (clang 14's "
            "TSan runtime and this kernel's address-space layout)\n");
}

namespace {

// The shapes of "glibc knows it by the name asked for": libjul (RUNPATH
// $ORIGIN/jl) dlopens "libfoo.so", which has no SONAME or another one;
// then other/libbar.so, with no search list and DT_NEEDED "libfoo.so", is
// dlopen'ed by the program or by libjul (argv[2] "l"); then the program
// asks for "libfoo.so" with RTLD_NOLOAD.  glibc alone binds libbar to the
// loaded libfoo by that name.  Built with `flags`.
void build_named_case(Tree& t, const std::string& dir, const std::string& flags, const std::string& soname) {
    t.write(dir + "/jul.c",
            "#include <dlfcn.h>\n"
            "void *jul_open(const char *n, int m) { void *h = dlopen(n, m); __asm__ volatile(\"\" ::: \"memory\"); "
            "return h; }\n");
    t.write(dir + "/foo.c", "int foo(void) { return 1; }\n");
    t.write(dir + "/bar.c", "int foo(void);\nint bar(void) { return foo() + 1; }\n");
    t.write(
        dir + "/main.c",
        "#define _GNU_SOURCE\n#include <dlfcn.h>\n#include <link.h>\n#include <stdio.h>\n#include <string.h>\n"
        "void *jul_open(const char *n, int m);\n"
        "static void show(const char *what, void *h) {\n"
        "    struct link_map *lm = NULL;\n"
        "    if (!h) { printf(\"%s ERROR %s\\n\", what, dlerror()); return; }\n"
        "    dlinfo(h, RTLD_DI_LINKMAP, &lm);\n"
        "    printf(\"%s %s\\n\", what, lm->l_name);\n}\n"
        "int main(int argc, char **argv) {\n"
        "    if (argc < 3) return 2;\n"
        "    show(\"foo\", jul_open(\"libfoo.so\", RTLD_NOW));\n"
        "    show(\"bar\", strcmp(argv[2], \"l\") == 0 ? jul_open(argv[1], RTLD_NOW) : dlopen(argv[1], RTLD_NOW));\n"
        "    show(\"noload\", dlopen(\"libfoo.so\", RTLD_NOW | RTLD_NOLOAD));\n"
        "    return 0;\n}\n");
    std::string d = quote(t.abs(dir));
    std::string so = soname.empty() ? "" : " -Wl,-soname," + soname;
    std::string cmd = "cd " + d + " && mkdir -p bin lib/jl other && cc -shared -fPIC -o lib/jl/libfoo.so foo.c" + so +
                      " && cc -shared -fPIC -o other/libbar.so bar.c -Llib/jl -l:libfoo.so" +
                      (soname.empty() ? "" : " && patchelf --replace-needed " + soname + " libfoo.so other/libbar.so") +
                      " && cc " + flags + " -O0 -shared -fPIC -o lib/libjul.so jul.c -ldl -Wl,--enable-new-dtags " +
                      "-Wl,-rpath,'$ORIGIN/jl' && cc " + flags + " -O0 -o bin/prog main.c -Llib -ljul -ldl " +
                      "-Wl,-rpath,'$ORIGIN/../lib'";
    ASSERT_EQ(sh(cmd), 0) << cmd;
}

std::vector<std::string> named_case_lines(Tree& t, const std::string& dir, const std::string& cmd, bool from_jul) {
    std::string out = t.abs(".out/named");
    const std::string bar = t.abs(dir + "/other/libbar.so");
    sh("cd " + quote(t.abs(dir)) + " && timeout 120 " + cmd + " " + quote(bar) + (from_jul ? " l" : " p") + " > " +
       quote(out) + " 2>/dev/null");
    return read_lines(out);
}

}  // namespace

// Behind AddressSanitizer's dlopen interceptor (ldshim first in LD_PRELOAD:
// the interceptor is ldshim's `next`, and opens the path it is handed) and
// in front of it (ASan's runtime first): whatever ldshim opens for the
// caller, glibc knows by the name asked for, as with the plain program and
// glibc alone (the oracle).  Under ASan alone the first dlopen already fails
// (glibc searches from libasan): the interceptor is really on the path.
TEST(RealInterposers, behind_asan_a_library_is_known_by_the_name_it_was_opened_by) {
    if (const char* emulator = ldshim::testmachine::emulator())
        GTEST_SKIP() << "SKIPPED: under " << emulator << ": this machine's sanitizer runtime";
    Tree t;
    std::string gasan = runtime(t, "readlink -f \"$(gcc -print-file-name=libasan.so)\"");
    if (gasan.empty()) GTEST_SKIP() << "SKIPPED: gcc's libasan is not installed";
    const std::string opts = "env ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0 ";
    int shapes = 0;
    for (const std::string soname : {"", "libfoo.so.1"})
        for (bool from_jul : {false, true}) {
            const std::string plain = "plain" + std::to_string(shapes), asan = "asan" + std::to_string(shapes);
            ++shapes;
            build_named_case(t, plain, "", soname);
            build_named_case(t, asan, "-fsanitize=address", soname);
            auto truth = named_case_lines(t, plain, "./bin/prog", from_jul);
            ASSERT_EQ(truth.size(), 3u) << ::testing::PrintToString(truth);
            for (auto& l : truth)
                l = l.substr(0, l.find(' ') + 1) + (l.find(" ERROR ") == std::string::npos ? "ok" : l);
            ASSERT_EQ(truth, (std::vector<std::string>{"foo ok", "bar ok", "noload ok"}));
            auto alone = named_case_lines(t, asan, opts + "./bin/prog", from_jul);
            ASSERT_FALSE(alone.empty());
            EXPECT_NE(alone[0].find("foo ERROR"), std::string::npos) << "ASan alone does not show the bug";
            for (const auto& [order, env] : std::vector<std::pair<std::string, std::string>>{
                     {"behind ldshim", "LD_PRELOAD=" + kPreload},
                     {"in front", "LD_PRELOAD=" + gasan + ":" + kPreload}}) {
                auto got = named_case_lines(t, asan, opts + env + " ./bin/prog", from_jul);
                // The same objects as the plain program, each under its own tree.
                auto want = named_case_lines(t, plain, "./bin/prog", from_jul);
                for (auto& l : want)
                    if (auto at = l.find(t.abs(plain)); at != std::string::npos)
                        l.replace(at, t.abs(plain).size(), t.abs(asan));
                EXPECT_EQ(got, want) << "SONAME '" << soname << "', libbar from "
                                     << (from_jul ? "libjul" : "the program") << ", ASan " << order;
            }
        }
}

TEST(RealInterposers, sanitizer_runtimes_preloaded_into_a_plain_program_are_repaired_in_either_order) {
    if (const char* emulator = ldshim::testmachine::emulator())
        GTEST_SKIP() << "SKIPPED: under " << emulator
                     << ": these tools are this machine's (tests/arm64/interposers_test.sh, tools_test.sh run arm64's)";
    Tree t;
    build_case(t, "plain", "cc", "");
    struct Rt {
        std::string name, package, path, options;
    };
    std::vector<Rt> rts = {
        {"libasan (gcc) preloaded", "libasan8", runtime(t, "readlink -f \"$(gcc -print-file-name=libasan.so)\""),
         "ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0"},
        {"libtsan (gcc) preloaded", "libtsan2", runtime(t, "readlink -f \"$(gcc -print-file-name=libtsan.so)\""),
         "TSAN_OPTIONS=report_bugs=0"},
        {"libclang_rt.asan preloaded", "libclang-rt-14-dev",
         runtime(t, "clang -print-file-name=libclang_rt.asan-" + std::string(ldshim::testmachine::kThis.clang_rt_arch) +
                        ".so"),
         "ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0"},
    };
    int rows = 0;
    for (const auto& rt : rts) {
        if (rt.path.empty()) {
            std::printf("[ SKIPPED  ] %s: not installed\n", rt.name.c_str());
            continue;
        }
        std::string env = "env " + rt.options + " LD_PRELOAD=";
        check_row(t, "plain",
                  {rt.name,
                   package_version(t, rt.package),
                   env + rt.path + " ./prog",
                   {{"first", env + kPreload + ":" + rt.path + " ./prog"},
                    {"last", env + rt.path + ":" + kPreload + " ./prog"}},
                   ""});
        ++rows;
    }
    if (rows == 0) GTEST_SKIP() << "SKIPPED: no sanitizer runtime installed";
}

TEST(RealInterposers, profilers_tracers_and_path_translators_started_as_their_users_start_them) {
    if (const char* emulator = ldshim::testmachine::emulator())
        GTEST_SKIP() << "SKIPPED: under " << emulator
                     << ": these tools are this machine's (tests/arm64/interposers_test.sh, tools_test.sh run arm64's)";
    Tree t;
    build_case(t, "plain", "cc", "");
    build_case(t, "pg", "cc", "-pg");
    const std::string with = "env LD_PRELOAD=" + kPreload + " ";
    struct Tool {
        std::string name, package, dir, command, active;
    };
    std::vector<Tool> tools = {
        {"heaptrack (profiler)", "heaptrack", "plain", "heaptrack -o " + quote(t.abs("ht")) + " ./prog",
         "libheaptrack_preload"},
        {"uftrace record (tracer)", "uftrace", "pg", "uftrace record -d " + quote(t.abs("uft")) + " ./prog",
         "libmcount"},
        {"fakechroot (path translator)", "fakechroot", "plain", "fakechroot ./prog", "libfakechroot"},
    };
    int rows = 0;
    for (const auto& tool : tools) {
        std::string exe = tool.command.substr(0, tool.command.find(' '));
        if (sh("command -v " + exe + " > /dev/null") != 0) {
            std::printf("[ SKIPPED  ] %s: not installed (Debian package %s)\n", tool.name.c_str(),
                        tool.package.c_str());
            continue;
        }
        sh("rm -rf " + quote(t.abs("ht")) + "* " + quote(t.abs("uft")));
        check_row(t, tool.dir,
                  {tool.name,
                   package_version(t, tool.package),
                   tool.command,
                   {{"wrapper", with + tool.command}},
                   tool.active});
        ++rows;
    }
    if (rows == 0) GTEST_SKIP() << "SKIPPED: none of heaptrack, uftrace, fakechroot is installed";
}
