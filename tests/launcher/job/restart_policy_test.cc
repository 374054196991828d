// RestartPolicy with synthetic times: budget, back-off, crash loop, exclusion by node id.
#include "launcher/job/restart_policy.h"

#include "gtest/gtest.h"

namespace dlaunch {
namespace {

// Rank `rank` of a 2-ranks-per-node job crashed; nodes are identified by id, and two agents
// may share a host (a local run), so the host says nothing about exclusion.
Failure Crash(int rank, int exit_code, int sig) {
  Failure f;
  f.cls = FailureClass::kWorkerCrash;
  f.global_rank = rank;
  f.local_rank = rank % 2;
  f.node_rank = f.node_id = rank / 2;
  f.host = "localhost";
  f.exit_code = exit_code;
  f.signal = sig;
  return f;
}

TEST(RestartPolicyTest, SpendsTheBudgetThenGivesUp) {
  RestartPolicy p({.max_restarts = 2, .crash_loop_limit = 0});
  RestartDecision d = p.OnFailure(Crash(1, -1, 9), -1, 10.0);
  EXPECT_TRUE(d.restart);
  EXPECT_EQ(d.reason, "restart 1 of 2");
  EXPECT_DOUBLE_EQ(d.restart_at_s, 10.0);   // no back-off before the first restart
  EXPECT_TRUE(p.OnFailure(Crash(2, -1, 9), -1, 20.0).restart);
  d = p.OnFailure(Crash(0, -1, 9), -1, 30.0);
  EXPECT_FALSE(d.restart);
  EXPECT_FALSE(d.crash_loop);
  EXPECT_EQ(d.reason, "restart budget spent (2 of 2 used)");
  EXPECT_EQ(p.restarts_used(), 2);
  RestartPolicy none({});
  EXPECT_EQ(none.OnFailure(Crash(0, 1, 0), -1, 0).reason, "no restarts allowed (max_restarts: 0)");
}

TEST(RestartPolicyTest, BacksOffOnConsecutiveFailuresAndStartsOverAfterAHealthyRound) {
  RestartPolicy p({.max_restarts = 10, .backoff_initial_s = 0, .backoff_max_s = 5,
                   .backoff_multiplier = 2, .crash_loop_limit = 0, .node_failure_limit = 0});
  EXPECT_DOUBLE_EQ(p.OnFailure(Crash(0, 1, 0), -1, 0).restart_at_s, 0);
  EXPECT_DOUBLE_EQ(p.OnFailure(Crash(1, 1, 0), -1, 0).restart_at_s, 2);
  EXPECT_DOUBLE_EQ(p.OnFailure(Crash(2, 1, 0), -1, 0).restart_at_s, 4);
  EXPECT_DOUBLE_EQ(p.OnFailure(Crash(3, 1, 0), -1, 0).restart_at_s, 5);   // capped
  p.OnHealthyRound();
  EXPECT_DOUBLE_EQ(p.OnFailure(Crash(0, 1, 0), -1, 100).restart_at_s, 100);
}

TEST(RestartPolicyTest, TheSameFailureWithNoNewCheckpointIsACrashLoop) {
  RestartPolicy p({.max_restarts = 10, .crash_loop_limit = 3, .node_failure_limit = 0});
  EXPECT_TRUE(p.OnFailure(Crash(1, 2, 0), 100, 0).restart);
  EXPECT_TRUE(p.OnFailure(Crash(1, 2, 0), 200, 0).restart);   // new checkpoint: progress
  EXPECT_TRUE(p.OnFailure(Crash(1, 2, 0), 200, 0).restart);
  RestartDecision d = p.OnFailure(Crash(1, 2, 0), 200, 0);
  EXPECT_FALSE(d.restart);
  EXPECT_TRUE(d.crash_loop);
  EXPECT_EQ(d.reason, "crash loop: the same failure 3 times in a row with no new checkpoint");
}

TEST(RestartPolicyTest, ADifferentFailureBreaksTheLoop) {
  RestartPolicy p({.max_restarts = 10, .crash_loop_limit = 2, .node_failure_limit = 0});
  EXPECT_TRUE(p.OnFailure(Crash(1, 2, 0), -1, 0).restart);
  EXPECT_TRUE(p.OnFailure(Crash(1, -1, 9), -1, 0).restart);   // another signature
  EXPECT_FALSE(p.OnFailure(Crash(1, -1, 9), -1, 0).restart);
}

// Node `id`, at node rank `rank` of its round, stopped sending heartbeats.
Failure Silent(int id, int rank) {
  Failure f;
  f.cls = FailureClass::kNodeSilent;
  f.node_id = id;
  f.node_rank = rank;
  f.host = "localhost";
  return f;
}

TEST(RestartPolicyTest, CrashLoopsAndExclusionCountTheSameNodeIdentity) {
  // Node 1 is lost at rank 1; a spare (node 3) takes rank 1 and is lost too: two nodes, no loop.
  RestartPolicy p({.max_restarts = 10, .crash_loop_limit = 2, .node_failure_limit = 0});
  EXPECT_TRUE(p.OnFailure(Silent(1, 1), -1, 0).restart);
  RestartDecision d = p.OnFailure(Silent(3, 1), -1, 0);
  EXPECT_TRUE(d.restart) << d.reason;
  // Node 3 again, now at rank 0 after another restart: the same node, the same failure.
  d = p.OnFailure(Silent(3, 0), -1, 0);
  EXPECT_TRUE(d.crash_loop) << d.reason;
}

TEST(RestartPolicyTest, ANodeThatFailsTwiceIsExcludedByIdNotByHost) {
  RestartPolicy p({.max_restarts = 10, .crash_loop_limit = 0});
  EXPECT_TRUE(p.OnFailure(Crash(2, -1, 9), -1, 0).excluded.empty());   // node 1 once
  EXPECT_TRUE(p.OnFailure(Crash(0, -1, 9), -1, 0).excluded.empty());   // node 0 once, same host
  RestartDecision d = p.OnFailure(Crash(3, -1, 9), -1, 0);             // node 1 again
  EXPECT_EQ(d.excluded, std::set<int>{1});
  EXPECT_TRUE(d.restart);
}

TEST(RestartPolicyTest, AFailureWithoutANodeExcludesNothing) {
  RestartPolicy p({.max_restarts = 10, .crash_loop_limit = 0, .node_failure_limit = 1});
  Failure f;
  f.cls = FailureClass::kLaunchError;
  EXPECT_TRUE(p.OnFailure(f, -1, 0).excluded.empty());
}

}  // namespace
}  // namespace dlaunch
