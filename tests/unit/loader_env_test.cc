// The loader's environment as ld.so reads it at start-up (loader/loader_env.h)
// and the start-up block the runtime reads it from (host/startup_env.h).
#include "loader/loader_env.h"
#include "host/startup_env.h"
#include "loader/engine.h"
#include "loader/loader_config.h"

#include <gtest/gtest.h>

#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

using namespace ldshim::loader;

TEST(LoaderEnv, the_loader_takes_the_last_assignment_of_a_name) {
    std::vector<std::string> env{"LD_LIBRARY_PATH=/first", "LD_LIBRARY_PATHX=/no", "LD_LIBRARY_PATH=/last",
                                 "LD_PRELOAD=", "LD_ORIGIN_PATH"};
    EnvEntries e = env_entries(env);
    EXPECT_EQ(loader_env_value(e, "LD_LIBRARY_PATH"), "/last");
    EXPECT_EQ(loader_env_value(e, "LD_PRELOAD"), "");
    EXPECT_EQ(loader_env_value(e, "LD_ORIGIN_PATH"), std::nullopt) << "an entry without '=' assigns nothing";
    EXPECT_EQ(loader_env_value(e, "LD_LIBRARY"), std::nullopt) << "a prefix of a name is not the name";
}

TEST(LoaderEnv, the_search_variables_of_a_block_are_each_the_last_one) {
    using namespace std::string_literals;
    std::string block = "LD_PRELOAD=a.so\0LD_ORIGIN_PATH=/o//\0LD_PRELOAD=b.so\0LD_LIBRARY_PATH=/l"s;
    EnvEntries e = env_entries(block);
    ASSERT_EQ(e.size(), 4u) << "a final entry without its NUL counts";
    LoaderEnvironment v = read_loader_environment(e);
    EXPECT_EQ(v.library_path, "/l");
    EXPECT_EQ(v.preload, "b.so");
    EXPECT_EQ(v.origin_path, "/o//");
    EngineOptions opts;
    set_environment(opts, v);
    EXPECT_EQ(opts.library_path, "/l");
    EXPECT_EQ(opts.preload, "b.so");
    EXPECT_EQ(opts.origin_path, "/o//");
    EXPECT_EQ(read_loader_environment(env_entries(static_cast<const char* const*>(nullptr))).library_path,
              std::nullopt);
}

// ld.so before 2.39 leaves "GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX2:glibc.cpu.hwcap_mask=0"
// as two strings: it writes a NUL over the ':' after each value it takes.
TEST(LoaderEnv, the_start_up_strings_have_glibc_tunables_whole_again) {
    using namespace std::string_literals;
    std::string block = "A=1\0GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX2\0glibc.cpu.hwcap_mask=0\0glibc.x\0B=glibc.y=1\0"s;
    EXPECT_EQ(startup_entries(block),
              (std::vector<std::string>{"A=1", "GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX2:glibc.cpu.hwcap_mask=0",
                                        "glibc.x", "B=glibc.y=1"}));
    std::vector<std::string> e = startup_entries(block);
    std::vector<const char*> envp;
    for (const auto& s : e) envp.push_back(s.c_str());
    envp.push_back(nullptr);
    EXPECT_EQ(hwcap_mask_from_env(envp.data(), false), 0u);
}

TEST(LoaderEnv, the_main_programs_origin_is_its_directory_else_ld_origin_path_unless_secure) {
    EXPECT_EQ(main_program_origin(std::string("/usr/bin/prog"), std::string("/x"), false), "/usr/bin");
    EXPECT_EQ(main_program_origin(std::string("/prog"), std::nullopt, false), "/");
    EXPECT_EQ(main_program_origin(std::string("/a/prog (deleted)"), std::nullopt, false), "/a");
    EXPECT_EQ(main_program_origin(std::nullopt, std::string("/opt/o//"), false), "/opt/o");
    EXPECT_EQ(main_program_origin(std::nullopt, std::string("/"), false), "/");
    EXPECT_EQ(main_program_origin(std::nullopt, std::string("/opt/o"), true), std::nullopt);
    EXPECT_EQ(main_program_origin(std::nullopt, std::nullopt, false), std::nullopt);
}

// Run only as a child of the test below: what the start-up block says after
// the program changed its environment every way it can.
TEST(StartupEnvChild, DISABLED_print_startup_library_path) {
    setenv("LD_LIBRARY_PATH", "/changed", 1);
    unsetenv("LD_LIBRARY_PATH");
    putenv(const_cast<char*>("LD_PRELOAD=/put.so"));
    clearenv();
    setenv("LD_ORIGIN_PATH", "/new", 1);
    std::string err;
    auto env = ldshim::host::startup_environment(&err);
    if (!env) {
        std::printf("ERROR %s\n", err.c_str());
        return;
    }
    std::printf("LLP %s\nPRELOAD %s\nORIGIN %s\n", env->vars.library_path.value_or("(none)").c_str(),
                env->vars.preload.value_or("(none)").c_str(), env->vars.origin_path.value_or("(none)").c_str());
}

// The child above, started with LD_LIBRARY_PATH twice (ld.so took the
// second); `hide_proc`: with a tmpfs over /proc, so that the strings are
// read in memory.  Its output, or "SKIPPED" where /proc cannot be hidden.
std::string start_up_child(bool hide_proc) {
    char exe[4096];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) return "no /proc/self/exe";
    exe[len] = '\0';
    int fds[2];
    if (pipe(fds) != 0) return "no pipe";
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 1);
        if (hide_proc &&
            (unshare(CLONE_NEWNS) != 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
             mount("none", "/proc", "tmpfs", 0, nullptr) != 0)) {
            std::printf("SKIPPED");
            std::fflush(stdout);
            _exit(0);
        }
        const char* argv[] = {"unit_tests", "--gtest_also_run_disabled_tests",
                              "--gtest_filter=StartupEnvChild.DISABLED_print_startup_library_path", nullptr};
        const char* envp[] = {"LD_LIBRARY_PATH=/ldshim-first", "LD_PRELOAD=", "LD_LIBRARY_PATH=/ldshim-last", nullptr};
        execve(exe, const_cast<char**>(argv), const_cast<char**>(envp));
        _exit(127);
    }
    close(fds[1]);
    std::string out;
    char buf[4096];
    for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return out;
}

void expect_start_up_values(const std::string& out) {
    EXPECT_NE(out.find("LLP /ldshim-last\n"), std::string::npos) << out;
    EXPECT_NE(out.find("PRELOAD \n"), std::string::npos) << out;
    EXPECT_NE(out.find("ORIGIN (none)\n"), std::string::npos) << out;
}

TEST(StartupEnv, is_what_ld_so_read_whatever_the_program_changed_since) {
    expect_start_up_values(start_up_child(false));
}

TEST(StartupEnv, without_proc_is_read_from_the_start_up_strings_in_memory) {
    std::string out = start_up_child(true);
    if (out == "SKIPPED") GTEST_SKIP() << "SKIPPED: /proc cannot be hidden here (no mount namespace)";
    expect_start_up_values(out);
}
