#include "launcher/run/root_cause.h"

#include "gtest/gtest.h"
#include "launcher/run/restart_policy.h"

namespace dlaunch {
namespace {

Failure Crash(int rank, double at, int exit_code, int sig, std::vector<std::string> tail = {}) {
  Failure f;
  f.cls = FailureClass::kWorkerCrash;
  f.global_rank = rank;
  f.local_rank = rank % 2;
  f.node_rank = rank / 2;
  f.host = "h" + std::to_string(rank / 2 + 1);
  f.exit_code = exit_code;
  f.signal = sig;
  f.detected_at_s = at;
  f.log_tail = std::move(tail);
  return f;
}

TEST(RootCauseTest, AKilledRankIsTheCauseNotThePeersThatLostTheirConnection) {
  // The peer's error may even be seen first: its agent reported before the killed rank's.
  std::vector<Failure> fs = {
      Crash(0, 1.00, 1, 0, {"RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] "
                            "Connection closed by peer [10.0.0.3]:40123"}),
      Crash(3, 1.02, -1, 9),
      Crash(1, 1.05, 1, 0, {"Connection reset by peer"}),
  };
  RootCauseVerdict v = PickRootCause(fs);
  EXPECT_EQ(v.root.global_rank, 3);
  ASSERT_EQ(v.consequences.size(), 2u);
  EXPECT_EQ(v.consequences[0].global_rank, 0);
  EXPECT_EQ(v.consequences[1].global_rank, 1);
}

TEST(RootCauseTest, FailuresAfterTheStopAreConsequences) {
  Failure stopped = Crash(0, 0.5, -1, 15);
  stopped.after_stop = true;
  Failure lost;
  lost.cls = FailureClass::kAgentLost;
  lost.node_rank = 2;
  lost.host = "h3";
  lost.detected_at_s = 0.9;
  RootCauseVerdict v = PickRootCause({stopped, lost});
  EXPECT_EQ(v.root.cls, FailureClass::kAgentLost);
  EXPECT_EQ(DescribeFailure(v.root), "agent lost: node 2 (host h3)");
}

TEST(RootCauseTest, EarliestOwnFailureWinsAndTiesGoToTheLowerRank) {
  EXPECT_EQ(PickRootCause({Crash(5, 2.0, 3, 0), Crash(2, 1.0, 3, 0)}).root.global_rank, 2);
  EXPECT_EQ(PickRootCause({Crash(5, 1.0, 3, 0), Crash(2, 1.0, 3, 0)}).root.global_rank, 2);
  // Only consequences: the earliest of them is still named.
  EXPECT_EQ(PickRootCause({Crash(1, 2.0, 1, 0, {"Broken pipe"}),
                           Crash(4, 1.5, 1, 0, {"connection reset by peer"})}).root.global_rank, 4);
}

TEST(RootCauseTest, DescribeNamesRankNodeHostAndSignal) {
  EXPECT_EQ(DescribeFailure(Crash(3, 0, -1, 11)),
            "worker crash: rank 3 (local 1, node 1, host h2) killed by signal 11 (Segmentation fault)");
  Failure f = Crash(2, 0, 7, 0);
  EXPECT_EQ(DescribeFailure(f), "worker crash: rank 2 (local 0, node 1, host h2) exited with code 7");
}

TEST(RestartPolicyTest, SpendsTheBudgetThenGivesUp) {
  RestartPolicy p({.max_restarts = 2, .crash_loop_limit = 0});
  RestartDecision d = p.OnFailure(Crash(1, 0, -1, 9), -1, 10.0);
  EXPECT_TRUE(d.restart);
  EXPECT_EQ(d.reason, "restart 1 of 2");
  EXPECT_DOUBLE_EQ(d.restart_at_s, 10.0);   // no back-off before the first restart
  EXPECT_TRUE(p.OnFailure(Crash(2, 0, -1, 9), -1, 20.0).restart);
  d = p.OnFailure(Crash(0, 0, -1, 9), -1, 30.0);
  EXPECT_FALSE(d.restart);
  EXPECT_EQ(d.reason, "restart budget spent (2 of 2 used)");
  RestartPolicy none({});
  EXPECT_EQ(none.OnFailure(Crash(0, 0, 1, 0), -1, 0).reason, "no restarts allowed (max_restarts: 0)");
}

TEST(RestartPolicyTest, BacksOffOnConsecutiveFailuresAndStartsOverAfterAHealthyRound) {
  RestartPolicy p({.max_restarts = 10, .backoff_initial_s = 0, .backoff_max_s = 5,
                   .backoff_multiplier = 2, .crash_loop_limit = 0});
  EXPECT_DOUBLE_EQ(p.OnFailure(Crash(0, 0, 1, 0), -1, 0).restart_at_s, 0);
  EXPECT_DOUBLE_EQ(p.OnFailure(Crash(1, 0, 1, 0), -1, 0).restart_at_s, 2);
  EXPECT_DOUBLE_EQ(p.OnFailure(Crash(2, 0, 1, 0), -1, 0).restart_at_s, 4);
  EXPECT_DOUBLE_EQ(p.OnFailure(Crash(3, 0, 1, 0), -1, 0).restart_at_s, 5);   // capped
  p.OnHealthyRound();
  EXPECT_DOUBLE_EQ(p.OnFailure(Crash(0, 0, 1, 0), -1, 100).restart_at_s, 100);
}

TEST(RestartPolicyTest, TheSameFailureWithNoNewCheckpointIsACrashLoop) {
  RestartPolicy p({.max_restarts = 10, .crash_loop_limit = 3});
  EXPECT_TRUE(p.OnFailure(Crash(1, 0, 2, 0), 100, 0).restart);
  EXPECT_TRUE(p.OnFailure(Crash(1, 0, 2, 0), 200, 0).restart);   // new checkpoint: progress
  EXPECT_TRUE(p.OnFailure(Crash(1, 0, 2, 0), 200, 0).restart);
  RestartDecision d = p.OnFailure(Crash(1, 0, 2, 0), 200, 0);
  EXPECT_FALSE(d.restart);
  EXPECT_EQ(d.reason, "crash loop: the same failure 3 times in a row with no new checkpoint");
}

TEST(RestartPolicyTest, ANodeThatFailsTwiceIsExcluded) {
  RestartPolicy p({.max_restarts = 10, .crash_loop_limit = 0});
  EXPECT_TRUE(p.OnFailure(Crash(2, 0, -1, 9), -1, 0).excluded.empty());   // h2 once
  EXPECT_TRUE(p.OnFailure(Crash(0, 0, -1, 9), -1, 0).excluded.empty());   // h1 once
  RestartDecision d = p.OnFailure(Crash(3, 0, -1, 9), -1, 0);             // h2 again
  EXPECT_EQ(d.excluded, std::set<std::string>{"h2"});
}

}  // namespace
}  // namespace dlaunch
