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
