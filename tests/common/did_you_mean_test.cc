// EditDistance and ClosestMatch: the "did you mean" suggestions of job.yaml and flag errors.
#include "common/did_you_mean.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace dlaunch {
namespace {

TEST(EditDistanceTest, CountsEditsAndAdjacentSwaps) {
  EXPECT_EQ(EditDistance("", ""), 0);
  EXPECT_EQ(EditDistance("nodes", "nodes"), 0);
  EXPECT_EQ(EditDistance("nodez", "nodes"), 1);
  EXPECT_EQ(EditDistance("ndoes", "nodes"), 1);
  EXPECT_EQ(EditDistance("node", "nodes"), 1);
  EXPECT_EQ(EditDistance("", "abc"), 3);
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3);
}

TEST(ClosestMatchTest, SuggestsOnlyPlausibleTypos) {
  const std::vector<std::string> keys = {"name", "nodes", "nproc_per_node", "command", "env"};
  EXPECT_EQ(ClosestMatch("nodez", keys), "nodes");
  EXPECT_EQ(ClosestMatch("Nodes", keys), "nodes");
  EXPECT_EQ(ClosestMatch("comand", keys), "command");
  EXPECT_EQ(ClosestMatch("nproc_per_nodes", keys), "nproc_per_node");
  EXPECT_EQ(ClosestMatch("xyz", keys), "");
  EXPECT_EQ(ClosestMatch("ev", keys), "env");
  EXPECT_EQ(ClosestMatch("na", keys), "");  // two edits are too many for a short word
  EXPECT_EQ(ClosestMatch("walltime", keys), "");
}

}  // namespace
}  // namespace dlaunch
