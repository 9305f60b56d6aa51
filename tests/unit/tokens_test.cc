#include "loader/tokens.h"

#include <gtest/gtest.h>

using namespace ldshim::loader;

namespace {
const std::vector<std::string> kSystem = {"/lib/x86_64-linux-gnu/", "/usr/lib/x86_64-linux-gnu/", "/lib/", "/usr/lib/"};
DstValues vals() { return {std::string("/t/x6"), std::string("x86_64"), "lib/x86_64-linux-gnu"}; }
std::string expand(std::string_view s, bool secure = false, bool main = false) {
    return substitute_dsts(s, vals(), DstPolicy{secure, main, &kSystem});
}
}  // namespace

TEST(Tokens, origin_plain_and_braced) {
    EXPECT_EQ(expand("$ORIGIN/o1"), "/t/x6/o1");
    EXPECT_EQ(expand("${ORIGIN}/o2"), "/t/x6/o2");
}

TEST(Tokens, identifier_character_after_name_is_not_a_token) {
    EXPECT_EQ(expand("$ORIGINX/o3"), "$ORIGINX/o3");
    EXPECT_EQ(expand("$LIB64/x"), "$LIB64/x");
    EXPECT_EQ(expand("$ORIGIN_x"), "$ORIGIN_x");
}

TEST(Tokens, unclosed_brace_is_literal) { EXPECT_EQ(expand("${ORIGIN/o9"), "${ORIGIN/o9"); }

TEST(Tokens, lib_and_platform_values) {
    EXPECT_EQ(expand("$LIB/o4"), "lib/x86_64-linux-gnu/o4");
    EXPECT_EQ(expand("${LIB}/o4b"), "lib/x86_64-linux-gnu/o4b");
    EXPECT_EQ(expand("$PLATFORM/o5"), "x86_64/o5");
}

TEST(Tokens, token_anywhere_outside_secure_mode) {
    EXPECT_EQ(expand("/abs/$ORIGIN/o6"), "/abs//t/x6/o6");
    EXPECT_EQ(expand("$/o7"), "$/o7");
    EXPECT_EQ(expand("$$ORIGIN/o8"), "$/t/x6/o8");
    EXPECT_EQ(expand("a$ORIGIN$LIB"), "a/t/x6lib/x86_64-linux-gnu");
}

TEST(Tokens, unknown_origin_drops_element) {
    DstDrop why;
    EXPECT_EQ(substitute_dsts("$ORIGIN/x", DstValues{std::nullopt, "x86_64", "lib"}, {}, &why), "");
    EXPECT_EQ(why, DstDrop::unknown_value);
    EXPECT_EQ(substitute_dsts("$PLATFORM/x", DstValues{"/o", std::nullopt, "lib"}, {}), "");
}

TEST(Tokens, secure_mode_accepts_only_leading_origin) {
    DstDrop why;
    EXPECT_EQ(substitute_dsts("/abs/$ORIGIN/x", vals(), {true, false, &kSystem}, &why), "");
    EXPECT_EQ(why, DstDrop::secure_position);
    EXPECT_EQ(expand("$ORIGINfoo", true), "$ORIGINfoo");  // not a token at all
    EXPECT_EQ(expand("$ORIGIN/../o1", true, false), "/t/x6/../o1");
    EXPECT_EQ(expand("$ORIGIN", true, false), "/t/x6");
    EXPECT_EQ(expand("$LIB/y", true, true), "lib/x86_64-linux-gnu/y");
}

TEST(Tokens, secure_main_program_origin_must_be_trusted) {
    DstDrop why;
    EXPECT_EQ(substitute_dsts("$ORIGIN/o1", vals(), {true, true, &kSystem}, &why), "");
    EXPECT_EQ(why, DstDrop::untrusted_dir);
    DstValues sys{std::string("/usr/lib/x86_64-linux-gnu"), std::string("x86_64"), "lib"};
    EXPECT_EQ(substitute_dsts("$ORIGIN/plugins", sys, {true, true, &kSystem}), "/usr/lib/x86_64-linux-gnu/plugins");
}

TEST(Tokens, trusted_path_normalisation) {
    EXPECT_TRUE(is_trusted_path("/usr/lib/x86_64-linux-gnu/./a", kSystem));
    EXPECT_TRUE(is_trusted_path("/usr//lib/x", kSystem));
    EXPECT_FALSE(is_trusted_path("/usr/lib/../../etc", kSystem));
    EXPECT_TRUE(is_trusted_path("/lib", kSystem));
    EXPECT_FALSE(is_trusted_path("", kSystem));
    EXPECT_FALSE(is_trusted_path("/opt/lib", kSystem));
}

TEST(Tokens, counts_only_known_tokens) {
    EXPECT_EQ(count_dsts("plain"), 0u);
    EXPECT_EQ(count_dsts("$ORIGIN/$LIB/${PLATFORM}"), 3u);
    EXPECT_EQ(count_dsts("$FOO$ORIGINX${ORIGIN"), 0u);
    EXPECT_EQ(count_dsts("$$ORIGIN"), 1u);
}
