// The loader's environment as ld.so reads it at start-up (loader/loader_env.h).
#include "loader/loader_env.h"
#include "loader/engine.h"
#include "loader/loader_config.h"

#include <gtest/gtest.h>

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
