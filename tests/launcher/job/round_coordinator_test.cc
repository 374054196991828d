// RoundCoordinator: waiting for a stopped round's end, who leaves, the restart plan (survivors
// in order, spares up to the first round's size, exclusion bounded by nodes.min), the hold until
// the lost nodes' workers are surely gone, and the next round built by AssignRound.
#include "launcher/job/round_coordinator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/job_actions.h"

namespace dlaunch {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Nodes 0..2 in session, spare 3 (two slots) in session.
NodeTable Table() {
  NodeTable t;
  t.AddRound0(AssignRound(0, {TestNode(0), TestNode(1), TestNode(2)}, 0), 1);
  t.AddSpare(3, TestNode(3, 2), 1);
  for (int i = 0; i < 4; ++i) t.OpenSession(i, 10 + i, 1);
  return t;
}

Failure NodeFailure(int node_id) {
  Failure f;
  f.cls = FailureClass::kAgentLost;
  f.node_id = node_id;
  f.node_rank = node_id;
  return f;
}

RestartSettings Restarts(int max) {
  RestartSettings s;
  s.max_restarts = max;
  s.backoff_initial_s = 1;
  return s;
}

TEST(RoundCoordinatorTest, TheStopIsOverWhenEveryMemberEndedOrAtTheDeadline) {
  NodeTable t = Table();
  RoundCoordinator c(Restarts(2), 3, 1);
  c.BeginStop(10, 4);
  EXPECT_TRUE(c.restarting());
  EXPECT_EQ(*c.stop_deadline_s(), 14);
  t.at(0).ended_round = 0;
  t.at(1).ended_round = 0;
  EXPECT_FALSE(c.TakeStopOver(t, 0, 11));
  t.EndSession(2, 12, 11.5);                 // a session that ended counts as ended
  EXPECT_TRUE(c.TakeStopOver(t, 0, 12));
  EXPECT_FALSE(c.stopping());
  c.BeginStop(20, 4);
  t.at(0).ended_round = -1;
  EXPECT_FALSE(c.TakeStopOver(t, 1, 23.9));
  EXPECT_TRUE(c.TakeStopOver(t, 1, 24));     // the deadline
}

TEST(RoundCoordinatorTest, MembersStillEndingTheRoundMoveTheDeadline) {
  // A stop that takes seconds to reach every agent: the ends arrive past grace + slack.
  NodeTable t = Table();
  RoundCoordinator c(Restarts(2), 3, 1);
  c.BeginStop(10, 3);
  c.NoteMemberEnded(11, 2);                  // before the deadline less the slack: no change
  EXPECT_EQ(*c.stop_deadline_s(), 13);
  t.at(0).ended_round = 0;
  c.NoteMemberEnded(12.5, 2);
  EXPECT_EQ(*c.stop_deadline_s(), 14.5);
  EXPECT_FALSE(c.TakeStopOver(t, 0, 13.5));  // past the first deadline, one ended 1 s ago
  t.at(1).ended_round = 0;
  c.NoteMemberEnded(14, 2);
  EXPECT_FALSE(c.TakeStopOver(t, 0, 15.9));
  EXPECT_TRUE(c.TakeStopOver(t, 0, 16));     // node 2 silent 2 s after the last end
  c.NoteMemberEnded(17, 2);                  // a late end after the stop is over moves nothing
  EXPECT_FALSE(c.stopping());
  // Ends trickling in one by one move it 30 s past the first deadline at most.
  c.BeginStop(100, 3);
  for (double t = 104; t < 200; t += 1.5) c.NoteMemberEnded(t, 2);
  EXPECT_EQ(*c.stop_deadline_s(), 133);
}

TEST(RoundCoordinatorTest, MembersThatDidNotEndSayWhy) {
  NodeTable t;
  t.AddRound0(AssignRound(0, {TestNode(0), TestNode(1), TestNode(2)}, 0), 1);
  t.OpenSession(0, 10, 1);
  t.OpenSession(1, 11, 1);
  t.EndSession(1, 11, 2);
  t.at(0).ended_round = 0;
  auto left = RoundCoordinator::MembersThatDidNotEnd(t, 0);
  ASSERT_EQ(left.size(), 2u);
  EXPECT_EQ(left[0].first, 1);
  EXPECT_EQ(left[0].second, "its session ended");
  EXPECT_EQ(left[1].first, 2);
  EXPECT_EQ(left[1].second, "it never opened its session");
  t.OpenSession(2, 12, 3);
  EXPECT_EQ(RoundCoordinator::MembersThatDidNotEnd(t, 0)[1].second, "it did not end its round in time");
}

TEST(RoundCoordinatorTest, SurvivorsKeepTheirOrderAndASpareTakesTheLostPlace) {
  NodeTable t = Table();
  t.at(0).ended_round = 0;
  t.at(2).ended_round = 0;
  t.MarkGone(1);
  RoundCoordinator c(Restarts(2), 3, 1);
  c.BeginStop(5, 4);
  RestartPlan plan = c.Decide(t, NodeFailure(1), 0, 6);
  EXPECT_TRUE(plan.decision.restart);
  EXPECT_TRUE(plan.give_up.empty());
  EXPECT_THAT(plan.next, ElementsAre(0, 2, 3));
  EXPECT_THAT(plan.promoted, ElementsAre(3));
  EXPECT_THAT(plan.excluded, IsEmpty());
}

TEST(RoundCoordinatorTest, SparesFillOnlyUpToTheFirstRoundsSize) {
  NodeTable t = Table();
  for (int i = 0; i < 3; ++i) t.at(i).ended_round = 0;
  RoundCoordinator c(Restarts(2), 3, 1);
  RestartPlan plan = c.Decide(t, NodeFailure(1), 0, 6);
  EXPECT_THAT(plan.next, ElementsAre(0, 1, 2));
  EXPECT_THAT(plan.promoted, IsEmpty());
}

TEST(RoundCoordinatorTest, ExclusionNeverLeavesFewerThanNodesMin) {
  NodeTable t;
  t.AddRound0(AssignRound(0, {TestNode(0), TestNode(1)}, 0), 1);
  for (int i = 0; i < 2; ++i) t.OpenSession(i, 10 + i, 1);
  for (int i = 0; i < 2; ++i) t.at(i).ended_round = 0;
  RestartSettings s = Restarts(5);
  s.node_failure_limit = 1;
  s.crash_loop_limit = 10;
  RoundCoordinator needs_both(s, 2, 2);
  RestartPlan plan = needs_both.Decide(t, NodeFailure(1), 0, 6);
  EXPECT_THAT(plan.excluded, IsEmpty());
  EXPECT_THAT(plan.exclusion_kept, ElementsAre(1));
  EXPECT_THAT(plan.next, ElementsAre(0, 1));
  RoundCoordinator needs_one(s, 2, 1);
  plan = needs_one.Decide(t, NodeFailure(1), 0, 6);
  EXPECT_THAT(plan.excluded, ElementsAre(1));
  EXPECT_THAT(plan.next, ElementsAre(0));
}

TEST(RoundCoordinatorTest, TooFewNodesLeftGivesUp) {
  NodeTable t = Table();
  t.MarkGone(3);
  t.at(0).ended_round = 0;
  t.MarkGone(1);
  t.MarkGone(2);
  RoundCoordinator c(Restarts(2), 3, 2);
  RestartPlan plan = c.Decide(t, NodeFailure(1), 0, 6);
  EXPECT_EQ(plan.give_up, "only 1 node(s) left, fewer than nodes.min (2)");
}

TEST(RoundCoordinatorTest, TheNextRoundWaitsForTheLostNodesWorkers) {
  NodeTable t = Table();
  t.at(0).ended_round = 0;
  t.at(2).ended_round = 0;
  t.at(1).last_seen_s = 8;               // silent since 8 s, its session still open
  RoundCoordinator c(Restarts(2), 3, 1);
  c.NoteWorkersMayRun(t, 0, 1, 6, 2);    // its agent stops its workers 6 s after it was heard
  EXPECT_DOUBLE_EQ(c.workers_gone_by_s(), 14);
  EXPECT_DOUBLE_EQ(c.Schedule({0, 2, 3}, 10), 14);
  // Sent kStartLeadS ahead, its workers starting at 14.
  EXPECT_DOUBLE_EQ(*c.send_at_s(), 14 - RoundCoordinator::kStartLeadS);
  EXPECT_FALSE(c.TakeDue(t, 12.9).has_value());
  auto due = c.TakeDue(t, 13);
  ASSERT_TRUE(due.has_value());
  EXPECT_THAT(due->ids, ElementsAre(0, 2, 3));
  EXPECT_DOUBLE_EQ(due->workers_start_at_s, 14);
  EXPECT_FALSE(c.restarting());
}

TEST(RoundCoordinatorTest, ASessionThatEndedBoundsTheWaitByTheGrace) {
  NodeTable t = Table();
  t.at(0).ended_round = 0;
  t.at(2).ended_round = 0;
  t.at(1).last_seen_s = 8;
  t.EndSession(1, 11, 9);
  RoundCoordinator c(Restarts(2), 3, 1);
  c.NoteWorkersMayRun(t, 0, 1, 60, 2);
  // Gone a grace and the kill's slack after its session ended, well before 8 + 60.
  EXPECT_LT(c.workers_gone_by_s(), 15);
  EXPECT_GE(c.workers_gone_by_s(), 11);
}

TEST(RoundCoordinatorTest, ANodeGoneDuringTheBackOffLeavesTheNextRound) {
  NodeTable t = Table();
  RoundCoordinator c(Restarts(2), 3, 2);
  c.Schedule({0, 2}, 5);
  t.MarkGone(2);
  auto due = c.TakeDue(t, 6);
  ASSERT_TRUE(due.has_value());
  EXPECT_THAT(due->ids, IsEmpty());
  EXPECT_EQ(due->give_up, "only 1 node(s) left, fewer than nodes.min (2)");
}

TEST(RoundCoordinatorTest, TheNextRoundUsesFreshPortsAndNode0sAddress) {
  NodeTable t = Table();
  t.at(2).worker_port = 41002;
  RoundResult r = RoundCoordinator::BuildRound(t, {2, 3}, 1);
  EXPECT_EQ(r.round, 1);
  EXPECT_EQ(r.world_size, 3);
  EXPECT_EQ(r.master_addr, "10.0.0.2");
  EXPECT_EQ(r.master_port, 41002);
  EXPECT_EQ(r.assignments[1].rank_offset, 1);
  EXPECT_EQ(r.assignments[1].local_world_size, 2);
}

}  // namespace
}  // namespace dlaunch
