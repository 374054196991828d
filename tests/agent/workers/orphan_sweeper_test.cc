#include "agent/workers/orphan_sweeper.h"

#include <gtest/gtest.h>

namespace dlaunch {
namespace {

TEST(OrphanSweeperTest, ParentAndStateAreReadPastACommWithSpacesAndParentheses) {
  char state = 0;
  EXPECT_EQ(ParentFromStat("4242 (python3) S 17 4242 4242 0 -1 4194560", &state), 17);
  EXPECT_EQ(state, 'S');
  EXPECT_EQ(ParentFromStat("77 (my (odd) worker) Z 1 77 77 0", &state), 1);
  EXPECT_EQ(state, 'Z');
  EXPECT_EQ(ParentFromStat("garbage"), -1);
  EXPECT_EQ(ParentFromStat("12 (x) R"), -1);
}

TEST(OrphanSweeperTest, AProcessWithNoOrphansHasNoneToEnd) {
  EXPECT_TRUE(AdoptedChildren().empty());
  EXPECT_TRUE(EndAdopted(std::chrono::milliseconds(10)).empty());
}

}  // namespace
}  // namespace dlaunch
