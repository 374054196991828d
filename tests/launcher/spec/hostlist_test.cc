#include "launcher/spec/hostlist.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace dlaunch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> Expand(std::string_view text) {
  absl::StatusOr<std::vector<std::string>> hosts = ExpandHostlist(text);
  EXPECT_TRUE(hosts.ok()) << hosts.status();
  return hosts.ok() ? *hosts : std::vector<std::string>{};
}

std::string ExpandError(std::string_view text) {
  absl::StatusOr<std::vector<std::string>> hosts = ExpandHostlist(text);
  EXPECT_FALSE(hosts.ok()) << text;
  EXPECT_EQ(hosts.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(hosts.status().message());
}

TEST(ExpandHostlistTest, PlainNames) {
  EXPECT_THAT(Expand("a"), ElementsAre("a"));
  EXPECT_THAT(Expand("a,b,c"), ElementsAre("a", "b", "c"));
  EXPECT_THAT(Expand(" a , b "), ElementsAre("a", "b"));
  EXPECT_THAT(Expand("x3004c0s1b0n0.hsn.cm.polaris.alcf.anl.gov"),
              ElementsAre("x3004c0s1b0n0.hsn.cm.polaris.alcf.anl.gov"));
}

TEST(ExpandHostlistTest, RangesKeepZeroPadding) {
  EXPECT_THAT(Expand("nid[001-004,007]"),
              ElementsAre("nid001", "nid002", "nid003", "nid004", "nid007"));
  EXPECT_THAT(Expand("n[08-11]"), ElementsAre("n08", "n09", "n10", "n11"));
  EXPECT_THAT(Expand("n[9-11]"), ElementsAre("n9", "n10", "n11"));
  EXPECT_THAT(Expand("n[099-100]"), ElementsAre("n099", "n100"));
  EXPECT_THAT(Expand("n[5]"), ElementsAre("n5"));
  EXPECT_THAT(Expand("n[3-3]"), ElementsAre("n3"));
}

TEST(ExpandHostlistTest, SuffixAfterBracket) {
  EXPECT_THAT(Expand("node[1-3]-ib"), ElementsAre("node1-ib", "node2-ib", "node3-ib"));
  EXPECT_THAT(Expand("[1-2]x"), ElementsAre("1x", "2x"));
}

TEST(ExpandHostlistTest, SeveralGroupsMultiplyLeftmostSlowest) {
  EXPECT_THAT(Expand("rack[1-2]-n[01-02]"),
              ElementsAre("rack1-n01", "rack1-n02", "rack2-n01", "rack2-n02"));
}

TEST(ExpandHostlistTest, CommasInsideBracketsDoNotSplitItems) {
  EXPECT_THAT(Expand("a[1,3],b[2-3,5],c"),
              ElementsAre("a1", "a3", "b2", "b3", "b5", "c"));
}

TEST(ExpandHostlistTest, MalformedInputNamesTheProblem) {
  EXPECT_EQ(ExpandError(""), "bad hostlist \"\": no hosts");
  EXPECT_EQ(ExpandError("nid[001-004"),
            "bad hostlist \"nid[001-004\": '[' at offset 3 has no matching ']'");
  EXPECT_EQ(ExpandError("nid001]"), "bad hostlist \"nid001]\": ']' at offset 6 has no matching '['");
  EXPECT_EQ(ExpandError("n[1-[2]]"), "bad hostlist \"n[1-[2]]\": nested '[' at offset 4");
  EXPECT_EQ(ExpandError("a,,b"), "bad hostlist \"a,,b\": empty host name");
  EXPECT_EQ(ExpandError("a,"), "bad hostlist \"a,\": empty host name");
  EXPECT_EQ(ExpandError("n[]"), "bad hostlist \"n[]\": empty brackets");
  EXPECT_EQ(ExpandError("n[4-1]"), "bad hostlist \"n[4-1]\": range '4-1' runs backwards");
  EXPECT_EQ(ExpandError("n[a-c]"),
            "bad hostlist \"n[a-c]\": 'a-c' is not a number or a lo-hi range of numbers");
  EXPECT_EQ(ExpandError("n[1-]"),
            "bad hostlist \"n[1-]\": '1-' is not a number or a lo-hi range of numbers");
  EXPECT_EQ(ExpandError("n[1,,2]"),
            "bad hostlist \"n[1,,2]\": '' is not a number or a lo-hi range of numbers");
  EXPECT_EQ(ExpandError("a b"), "bad hostlist \"a b\": 'a b' contains whitespace");
  EXPECT_THAT(ExpandError("n[0-999999999]"), HasSubstr("more than 100000 hosts"));
  EXPECT_THAT(ExpandError("a[0-999]b[0-999]c[0-9]"), HasSubstr("more than 100000 hosts"));
  EXPECT_THAT(ExpandError("n[1-99999999999999999999]"), HasSubstr("out of range"));
}

TEST(ExpandHostlistTest, WhatAnExpansionMayCostIsBounded) {
  // A long name times a large range was gigabytes: 1000 characters x 10^6 hosts.
  const std::string long_name(1000, 'n');
  EXPECT_EQ(ExpandError("a," + long_name + "[0-999999]"),
            "bad hostlist \"a," + std::string(198, 'n') +
                "...\": 'nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn...' names a host of more than "
                "255 characters");
  EXPECT_THAT(ExpandError(std::string(255, 'n') + "[0-9]"), HasSubstr("more than 255 characters"));
  // Found by fuzzing: twelve groups of three are half a million names of 200 characters.
  std::string groups = std::string(150, 'n');
  for (int i = 0; i < 12; ++i) groups += "[1-3]k";
  EXPECT_THAT(ExpandError(groups), HasSubstr("more than 8 MiB of host names"));
  // Within the host bound, long names: 10^5 names of 250 characters.
  EXPECT_THAT(ExpandError(std::string(245, 'n') + "[0-9][0-9][0-9][0-9][0-9]"),
              HasSubstr("more than 8 MiB of host names"));
  ASSERT_TRUE(ExpandHostlist(std::string(253, 'n') + "[00-99]").ok());
  // Plain names count against the bound as ranges do, and a list of millions stops early.
  std::string many;
  for (int i = 0; i < 100001; ++i) many += "n,";
  EXPECT_THAT(ExpandError(many + "n"), HasSubstr("more than 100000 hosts"));
  many.resize(200000);  // exactly 10^5 names, the last without its comma
  many.pop_back();
  absl::StatusOr<std::vector<std::string>> all = ExpandHostlist(many);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->size(), 100000u);
  EXPECT_THAT(ExpandError(many + ",m"), HasSubstr("more than 100000 hosts"));
}

}  // namespace
}  // namespace dlaunch
