// NodeTable: members, spares and gone nodes by node id, sessions, and node rank <-> node id.
#include "launcher/job/node_table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/job_actions.h"

namespace dlaunch {
namespace {

using ::testing::ElementsAre;

NodeTable ThreeAndASpare() {
  NodeTable t;
  t.AddRound0(AssignRound(0, {TestNode(0), TestNode(1), TestNode(2)}, 0), 1);
  t.AddSpare(3, TestNode(3, 2), 1.5);
  return t;
}

TEST(NodeTableTest, Round0GivesNodeIdsInNodeRankOrder) {
  NodeTable t = ThreeAndASpare();
  EXPECT_THAT(t.members(), ElementsAre(0, 1, 2));
  EXPECT_EQ(t.NodeRankOf(2), 2);
  EXPECT_EQ(t.NodeRankOf(3), -1);  // a spare has no place
  EXPECT_EQ(t.at(3).status, NodeStatus::kSpare);
  EXPECT_EQ(t.at(1).session_state, SessionState::kNotOpened);
  NodePlace place = t.PlaceOf(1);
  EXPECT_EQ(place.node_id, 1);
  EXPECT_EQ(place.node_rank, 1);
  EXPECT_EQ(place.host, "n1");
  EXPECT_EQ(t.Find(7), nullptr);
}

TEST(NodeTableTest, SessionsOpenEndAndAReplacedSessionIsIgnored) {
  NodeTable t = ThreeAndASpare();
  t.OpenSession(0, 10, 2);
  t.at(0).workers_running = 1;
  EXPECT_TRUE(t.at(0).open());
  EXPECT_EQ(t.MembersUp(), 1);
  EXPECT_EQ(t.WorkersRunning(), 1);
  t.OpenSession(0, 11, 3);                  // the agent reconnected
  EXPECT_FALSE(t.EndSession(0, 10, 4));     // the old session's end changes nothing
  EXPECT_TRUE(t.at(0).open());
  EXPECT_TRUE(t.EndSession(0, 11, 5));
  EXPECT_EQ(t.at(0).session_state, SessionState::kEnded);
  EXPECT_DOUBLE_EQ(t.at(0).session_ended_at_s, 5);
  EXPECT_EQ(t.at(0).workers_running, 0);
  EXPECT_FALSE(t.EndSession(0, 11, 6));     // ends once
  EXPECT_FALSE(t.AnyOpen());
}

TEST(NodeTableTest, ANextRoundPromotesSparesAndRenumbersNodeRanks) {
  NodeTable t = ThreeAndASpare();
  EXPECT_TRUE(t.MarkGone(1));
  EXPECT_FALSE(t.MarkGone(1));
  t.SetMembers({0, 2, 3});
  EXPECT_EQ(t.at(3).status, NodeStatus::kMember);
  EXPECT_EQ(t.NodeRankOf(2), 1);  // moved into the middle
  EXPECT_EQ(t.NodeRankOf(3), 2);
  EXPECT_EQ(t.NodeRankOf(1), -1);
  EXPECT_EQ(t.at(1).status, NodeStatus::kGone);
}

TEST(NodeTableTest, ReachableAvailableAndSilence) {
  NodeTable t = ThreeAndASpare();
  for (int i = 0; i < 4; ++i) t.OpenSession(i, 10 + i, 2);
  t.MarkGone(2);
  EXPECT_THAT(t.Reachable(), ElementsAre(0, 1, 3));  // spares hear commands; gone nodes do not
  EXPECT_EQ(t.Available(), 3);
  EXPECT_EQ(t.MembersUp(), 2);
  t.at(0).last_seen_s = 10;
  t.at(1).last_seen_s = 10;
  t.at(3).last_seen_s = 0;                            // a silent spare stalls nobody
  EXPECT_FALSE(t.AnyMemberSilent(12, 2));
  t.at(1).last_seen_s = 9;
  EXPECT_TRUE(t.AnyMemberSilent(12, 2));
}

}  // namespace
}  // namespace dlaunch
