// The environment records of ldsearch --diff's audit module (env_audit.c).
#include "tools/ldsearch/env_record.h"

#include <gtest/gtest.h>

#include <string>

using ldsearch::Environment;
using ldsearch::parse_env_records;

namespace {
std::string record(const std::string& body) {
    return "ldsearch-env " + std::to_string(body.size()) + "\n" + body + "\n";
}
}  // namespace

TEST(EnvRecords, one_record_per_exec_in_order_with_every_entry) {
    using namespace std::string_literals;
    auto r = parse_env_records(record("A=1\0LD_LIBRARY_PATH=/x\0"s) + record("B=\0HOME=/root\0"s));
    ASSERT_FALSE(r.truncated);
    ASSERT_EQ(r.execs.size(), 2u);
    EXPECT_EQ(r.execs[0], (Environment{"A=1", "LD_LIBRARY_PATH=/x"}));
    EXPECT_EQ(r.execs[1], (Environment{"B=", "HOME=/root"}));
}

TEST(EnvRecords, an_empty_environment_is_a_record_and_newlines_inside_values_survive) {
    using namespace std::string_literals;
    auto r = parse_env_records(record("") + record("X=a\nb\0"s));
    ASSERT_EQ(r.execs.size(), 2u);
    EXPECT_TRUE(r.execs[0].empty());
    EXPECT_EQ(r.execs[1], (Environment{"X=a\nb"}));
}

TEST(EnvRecords, a_cut_or_foreign_text_keeps_the_whole_records_before_it) {
    std::string two = record("A=1") + record("B=2");
    std::size_t first = record("A=1").size();
    for (std::size_t cut = 1; cut < two.size(); ++cut) {
        auto r = parse_env_records(std::string_view(two).substr(0, cut));
        EXPECT_EQ(r.truncated, cut != first) << cut;
        EXPECT_EQ(r.execs.size(), cut < first ? 0u : 1u) << cut;
    }
    for (const char* bad : {"hello\n", "ldsearch-env x\nA", "ldsearch-env 99999999999999999999999\n",
                            "ldsearch-env 3\nA=1X", "ldsearch-env -1\n\n"})
        EXPECT_TRUE(parse_env_records(bad).truncated) << bad;
}
