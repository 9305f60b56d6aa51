#include "loader/paths.h"
#include "loader/path_pool.h"

#include <gtest/gtest.h>

using namespace ldshim::loader;
using V = std::vector<std::string_view>;

TEST(PathLists, every_separator_is_a_boundary) {
    EXPECT_EQ(split_path("a::b", ":"), (V{"a", "", "b"}));
    EXPECT_EQ(split_path(":", ":"), (V{"", ""}));
    EXPECT_EQ(split_path("a;b:c", ":;"), (V{"a", "b", "c"}));
    EXPECT_EQ(split_path("a;b", ":"), (V{"a;b"}));
    EXPECT_EQ(split_path("", ":"), (V{""}));
}

TEST(PathLists, trailing_slashes_normalise_to_one) {
    EXPECT_EQ(normalize_dir("/a"), "/a/");
    EXPECT_EQ(normalize_dir("/a/"), "/a/");
    EXPECT_EQ(normalize_dir("/a//"), "/a/");
    EXPECT_EQ(normalize_dir("/"), "/");
    EXPECT_EQ(normalize_dir("//"), "/");
    EXPECT_EQ(normalize_dir("a"), "a/");
    EXPECT_EQ(normalize_dir("/x/./a"), "/x/./a/");  // nothing else is cleaned
    EXPECT_EQ(normalize_dir(""), "");
}

TEST(PathLists, pool_keeps_first_label_and_owner) {
    DirPool pool(3);
    DirEntry* a = pool.intern("/common/", Label::rpath, std::string(""));
    DirEntry* b = pool.intern("/common/", Label::ld_library_path, std::nullopt);
    EXPECT_EQ(a, b);
    EXPECT_EQ(b->what, Label::rpath);
    ASSERT_TRUE(b->where.has_value());
    EXPECT_EQ(*b->where, "");
    EXPECT_EQ(pool.size(), 1u);
}

TEST(PathLists, relative_entries_are_never_unknown) {
    DirPool pool(2);
    EXPECT_EQ(pool.intern("rel/", Label::rpath, std::nullopt)->status[0], DirStatus::existing);
    EXPECT_EQ(pool.intern("", Label::rpath, std::nullopt)->status[1], DirStatus::existing);
    EXPECT_EQ(pool.intern("/abs/", Label::rpath, std::nullopt)->status[0], DirStatus::unknown);
}

TEST(PathLists, a_list_expands_normalises_and_drops_repeats) {
    const std::vector<std::string> system{"/usr/lib/"};
    DstValues values{"/app/bin", std::nullopt, "lib64"};
    DstPolicy policy{false, false, &system};
    DstDrops drops;
    auto dirs =
        expand_search_list("$ORIGIN/../$LIB//:/a;;$PLATFORM/x:/a/:$ORIGIN/../lib64", ":;", values, policy, &drops);
    EXPECT_EQ(dirs, (std::vector<std::string>{"/app/bin/../lib64/", "/a/", ""}));
    ASSERT_EQ(drops.size(), 1u);
    EXPECT_EQ(drops[0].first, "$PLATFORM/x");
    EXPECT_EQ(drops[0].second, DstDrop::unknown_value);
}

TEST(PathLists, a_secure_list_keeps_only_trusted_origin_expansions) {
    const std::vector<std::string> system{"/usr/lib/"};
    DstValues values{"/usr/lib/app", std::nullopt, "lib"};
    DstDrops drops;
    auto dirs = expand_search_list("$ORIGIN/plugins:/x/$ORIGIN:$ORIGIN/../../../tmp", ":", values,
                                   DstPolicy{true, true, &system}, &drops);
    EXPECT_EQ(dirs, (std::vector<std::string>{"/usr/lib/app/plugins/"}));
    ASSERT_EQ(drops.size(), 2u);
    EXPECT_EQ(drops[0].second, DstDrop::secure_position);
    EXPECT_EQ(drops[1].second, DstDrop::untrusted_dir);
}

// loader/paths.h: the rules over path strings written once.
TEST(PathRules, the_directory_of_a_path_is_what_origin_takes) {
    EXPECT_EQ(directory_of("/a/b/libx.so"), "/a/b");
    EXPECT_EQ(directory_of("/libx.so"), "/");
    EXPECT_EQ(directory_of("a/libx.so"), "a");
    EXPECT_EQ(directory_of("libx.so"), ".");
}

TEST(PathRules, a_base_name_is_the_last_component) {
    EXPECT_EQ(base_name("/a/b/libx.so"), "libx.so");
    EXPECT_EQ(base_name("libx.so"), "libx.so");
    EXPECT_EQ(base_name("/a/"), "");
}

TEST(PathRules, a_path_ends_in_a_name_only_at_a_component_boundary) {
    EXPECT_TRUE(ends_in_component("/a/libx.so", "libx.so"));
    EXPECT_TRUE(ends_in_component("/libx.so", "libx.so"));
    EXPECT_TRUE(ends_in_component("d/sub/libx.so", "sub/libx.so"));
    EXPECT_FALSE(ends_in_component("/a/mylibx.so", "libx.so"));
    EXPECT_FALSE(ends_in_component("libx.so", "libx.so"));
}

TEST(PathRules, spellings_of_one_file_share_a_key_and_dot_dot_is_kept) {
    EXPECT_EQ(same_file_key("/a//b/./libx.so"), "/a/b/libx.so");
    EXPECT_EQ(same_file_key("./a/libx.so"), "a/libx.so");
    EXPECT_EQ(same_file_key("/a/b/."), "/a/b");
    EXPECT_EQ(same_file_key("/a/../b/libx.so"), "/a/../b/libx.so");
    EXPECT_EQ(same_file_key("/a/b/libx.so"), "/a/b/libx.so");
}
