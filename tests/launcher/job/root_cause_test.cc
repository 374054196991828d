#include "launcher/job/root_cause.h"

#include "gtest/gtest.h"

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

}  // namespace
}  // namespace dlaunch
