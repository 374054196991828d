// The round's ranks and the counts kept as their states change (launcher/job/rank_table.h).
#include "launcher/job/rank_table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace dlaunch {
namespace {

using ::testing::ElementsAre;

// Two nodes of two ranks, on node ids 5 and 7.
RoundResult TwoByTwo() {
  RoundResult r;
  r.assignments = {{0, 0, 2}, {1, 2, 2}};
  r.world_size = 4;
  return r;
}

TEST(RankTableTest, ARoundPlacesItsRanksOnTheNodesIds) {
  RankTable t;
  EXPECT_THAT(t.BeginRound(TwoByTwo(), {5, 7}), ElementsAre(0, 1, 2, 3));
  ASSERT_NE(t.Find(3), nullptr);
  EXPECT_EQ(t.Find(3)->node, 7);
  EXPECT_EQ(t.Find(4), nullptr);
  EXPECT_EQ(t.started(), 0);
  EXPECT_TRUE(t.Unfinished(5));
  EXPECT_TRUE(t.Unfinished(7));
  EXPECT_FALSE(t.Unfinished(6));
}

TEST(RankTableTest, StatesKeepTheCounts) {
  RankTable t;
  t.BeginRound(TwoByTwo(), {5, 7});
  for (int rank : {0, 1, 2, 3}) t.SetState(t.Of(rank, -1), v1::WorkerEvent::STARTED);
  EXPECT_EQ(t.started(), 4);
  t.SetState(t.Of(0, -1), v1::WorkerEvent::SUCCEEDED);
  t.SetState(t.Of(1, -1), v1::WorkerEvent::FAILED);
  EXPECT_EQ(t.succeeded(), 1);
  EXPECT_FALSE(t.Unfinished(5)) << "both of node 5's ranks ended";
  EXPECT_TRUE(t.Unfinished(7));
  t.SetState(t.Of(2, -1), v1::WorkerEvent::STOPPED);
  t.SetState(t.Of(3, -1), v1::WorkerEvent::SUCCEEDED);
  EXPECT_FALSE(t.Unfinished(7));
  EXPECT_EQ(t.succeeded(), 2);
  EXPECT_EQ(t.started(), 4) << "a state after the first counts no new start";
}

TEST(RankTableTest, ARankOutsideTheRoundCountsWithTheNodeThatSentIt) {
  RankTable t;
  t.BeginRound(TwoByTwo(), {5, 7});
  RankProgress& stray = t.Of(9, 7);
  EXPECT_EQ(stray.node, 7);
  for (int rank : {2, 3}) t.SetState(t.Of(rank, 7), v1::WorkerEvent::SUCCEEDED);
  EXPECT_TRUE(t.Unfinished(7)) << "rank 9 has not ended";
  t.SetState(stray, v1::WorkerEvent::SUCCEEDED);
  EXPECT_FALSE(t.Unfinished(7));
}

TEST(RankTableTest, ANewRoundStartsItsCountsOver) {
  RankTable t;
  t.BeginRound(TwoByTwo(), {5, 7});
  t.SetState(t.Of(0, 5), v1::WorkerEvent::SUCCEEDED);
  RoundResult next = TwoByTwo();
  next.assignments.pop_back();
  next.world_size = 2;
  EXPECT_THAT(t.BeginRound(next, {7}), ElementsAre(0, 1));
  EXPECT_EQ(t.succeeded(), 0);
  EXPECT_EQ(t.started(), 0);
  EXPECT_EQ(t.Find(0)->node, 7);
  EXPECT_EQ(t.Find(2), nullptr);
  EXPECT_FALSE(t.Unfinished(5));
  EXPECT_EQ(t.all().size(), 2u);
}

}  // namespace
}  // namespace dlaunch
