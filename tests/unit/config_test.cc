#include "loader/loader_config.h"

#include <gtest/gtest.h>

#include <cstdlib>

using namespace ldshim::loader;

namespace {
constexpr const char* kHelp236 = R"(
Shared library search path:
  (libraries located via /etc/ld.so.cache)
  /lib/x86_64-linux-gnu (system search path)
  /usr/lib/x86_64-linux-gnu (system search path)
  /lib (system search path)
  /usr/lib (system search path)

Subdirectories of glibc-hwcaps directories, in priority order:
  x86-64-v4 (supported, searched)
  x86-64-v3 (supported, searched)
  x86-64-v2 (supported, searched)

Legacy HWCAP subdirectories under library search path directories:
  x86_64 (AT_PLATFORM; supported, searched)
  tls (supported, searched)
  avx512_1
  x86_64 (supported, searched)
)";
}  // namespace

TEST(LoaderConfig, parses_glibc_236_help) {
    std::string err;
    auto cfg = parse_ld_so_help(kHelp236, &err);
    ASSERT_TRUE(cfg) << err;
    EXPECT_EQ(cfg->system_dirs,
              (std::vector<std::string>{"/lib/x86_64-linux-gnu/", "/usr/lib/x86_64-linux-gnu/", "/lib/", "/usr/lib/"}));
    EXPECT_EQ(cfg->hwcaps_active, (std::vector<std::string>{"x86-64-v4", "x86-64-v3", "x86-64-v2"}));
    EXPECT_EQ(cfg->platform, "x86_64");
    EXPECT_EQ(cfg->dst_lib, "lib/x86_64-linux-gnu");
    EXPECT_EQ(cfg->hwcap_searched, 0x2u);
    EXPECT_EQ(cfg->isa_levels, 0xFu);
    // 3 glibc-hwcaps + the 8-entry legacy power set of [x86_64, x86_64, tls].
    EXPECT_EQ(cfg->subdirs, (std::vector<std::string>{"glibc-hwcaps/x86-64-v4/", "glibc-hwcaps/x86-64-v3/",
                                                      "glibc-hwcaps/x86-64-v2/", "tls/x86_64/x86_64/", "tls/x86_64/",
                                                      "tls/x86_64/", "tls/", "x86_64/x86_64/", "x86_64/", "x86_64/",
                                                      ""}));
}

TEST(LoaderConfig, unsupported_level_is_not_searched) {
    std::string text = kHelp236;
    text.replace(text.find("x86-64-v4 (supported, searched)"), 31, "x86-64-v4");
    auto cfg = parse_ld_so_help(text, nullptr);
    ASSERT_TRUE(cfg);
    EXPECT_EQ(cfg->hwcaps_active, (std::vector<std::string>{"x86-64-v3", "x86-64-v2"}));
    EXPECT_EQ(cfg->isa_levels, 0x7u);
}

TEST(LoaderConfig, hwcap_mask_zero_leaves_platform_and_tls) {
    EXPECT_EQ(make_subdirs({}, {"x86_64", "tls"}), (std::vector<std::string>{"tls/x86_64/", "tls/", "x86_64/", ""}));
}

TEST(LoaderConfig, later_glibc_without_legacy_section) {
    std::string text = kHelp236;
    text.erase(text.find("\nLegacy HWCAP"));
    auto cfg = parse_ld_so_help(text, nullptr);
    ASSERT_TRUE(cfg);
    EXPECT_EQ(cfg->subdirs.size(), 4u);
    EXPECT_EQ(cfg->subdirs.back(), "");
}

TEST(LoaderConfig, garbage_is_an_error_not_a_crash) {
    std::string err;
    EXPECT_FALSE(parse_ld_so_help("hello\n  world (x)\n", &err));
    EXPECT_FALSE(err.empty());
    EXPECT_FALSE(parse_ld_so_help("", &err));
}

TEST(LoaderConfig, running_loader_answers) {
    std::string err;
    auto cfg = query_running_loader("/lib64/ld-linux-x86-64.so.2", &err);
    ASSERT_TRUE(cfg) << err;
    EXPECT_FALSE(cfg->system_dirs.empty());
    EXPECT_EQ(cfg->subdirs.back(), "");
    EXPECT_FALSE(query_running_loader("/nonexistent/ld.so", &err));
}

TEST(LoaderConfig, cached_answer_equals_fresh_answer) {
    char tmpl[] = "/tmp/ldshim-cfg-XXXXXX";
    ASSERT_TRUE(mkdtemp(tmpl));
    std::string dir = std::string(tmpl) + "/sub/ldshim";
    std::string err;
    auto fresh = query_running_loader("/lib64/ld-linux-x86-64.so.2", &err);
    auto first = query_loader_cached("/lib64/ld-linux-x86-64.so.2", dir, &err);   // miss: runs ld.so, writes
    auto second = query_loader_cached("/lib64/ld-linux-x86-64.so.2", dir, &err);  // hit: reads the file
    ASSERT_TRUE(fresh && first && second) << err;
    for (const auto* c : {&*first, &*second}) {
        EXPECT_EQ(c->system_dirs, fresh->system_dirs);
        EXPECT_EQ(c->subdirs, fresh->subdirs);
        EXPECT_EQ(c->platform, fresh->platform);
        EXPECT_EQ(c->hwcap_searched, fresh->hwcap_searched);
    }
    EXPECT_EQ(std::system(("test -n \"$(ls " + dir + ")\"").c_str()), 0) << "nothing was cached";
    // A different tunable is a different key, hence a fresh answer.
    setenv("GLIBC_TUNABLES", "glibc.cpu.hwcaps=-AVX2", 1);
    auto tuned = query_loader_cached("/lib64/ld-linux-x86-64.so.2", dir, &err);
    auto tuned_fresh = query_running_loader("/lib64/ld-linux-x86-64.so.2", &err);
    unsetenv("GLIBC_TUNABLES");
    ASSERT_TRUE(tuned && tuned_fresh);
    EXPECT_EQ(tuned->subdirs, tuned_fresh->subdirs);
    std::system((std::string("rm -rf ") + tmpl).c_str());
}
