// RelayMoves: a lost relay's nodes until each is back, on synthetic time.
#include "launcher/job/relay_moves.h"

#include "gtest/gtest.h"

namespace dlaunch {
namespace {

TEST(RelayMovesTest, ANodeIsMovingFromTheLossUntilItsSessionResumes) {
  RelayMoves moves;
  moves.Lost("relay 0", {3, 5}, 10.0);
  EXPECT_TRUE(moves.moving(3));
  EXPECT_TRUE(moves.moving(5));
  EXPECT_FALSE(moves.moving(4));

  RelayMoves::Resumed first = moves.Resume(5, 11.5);
  EXPECT_DOUBLE_EQ(first.after_s, 1.5);
  EXPECT_EQ(first.relay, "relay 0");
  EXPECT_FALSE(first.relay_back);  // node 3 is still moving
  EXPECT_FALSE(moves.moving(5));

  RelayMoves::Resumed last = moves.Resume(3, 12.0);
  EXPECT_TRUE(last.relay_back);
  EXPECT_EQ(moves.size(), 0u);
}

TEST(RelayMovesTest, ASessionThatResumesWithoutALostRelayClosesNothing) {
  RelayMoves moves;
  RelayMoves::Resumed r = moves.Resume(7, 4.0);
  EXPECT_EQ(r.relay, "");
  EXPECT_DOUBLE_EQ(r.after_s, 0);
  EXPECT_FALSE(r.relay_back);
}

TEST(RelayMovesTest, ANodeLostAgainCountsInItsNewRelaysGroupOnly) {
  RelayMoves moves;
  moves.Lost("relay 0", {1, 2}, 1.0);
  moves.Lost("relay 1", {2}, 2.0);  // node 2 moved to relay 1, which went too
  EXPECT_TRUE(moves.Resume(1, 3.0).relay_back);  // relay 0 waits for node 1 alone now
  RelayMoves::Resumed r = moves.Resume(2, 5.0);
  EXPECT_EQ(r.relay, "relay 1");
  EXPECT_DOUBLE_EQ(r.after_s, 3.0);
  EXPECT_TRUE(r.relay_back);
}

TEST(RelayMovesTest, ANodeListedTwiceIsCountedOnce) {
  RelayMoves moves;
  moves.Lost("relay 0", {4, 4}, 0.0);
  EXPECT_TRUE(moves.Resume(4, 1.0).relay_back);
}

}  // namespace
}  // namespace dlaunch
