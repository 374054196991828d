// AgentState with a stop that asks for stacks: the stop waits for the dump (DumpStacks, then
// OnStacksDumped), the heartbeats go on meanwhile, and stops, signals and exits that come during
// the dump are ordered as the launcher expects.
#include <signal.h>
#include <sys/wait.h>

#include <string>

#include "agent/core/agent_state.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/agent_actions.h"

namespace dlaunch {
namespace {

using std::chrono::milliseconds;
using ::testing::ElementsAre;

AgentState Running(int workers) {
  AgentState s(AgentConfig{milliseconds(1000), milliseconds(5000)});
  s.OnSessionOpened(At(0));
  s.OnWorkersStarted(workers, 0);
  return s;
}

StopRequest StopWithStacks(std::vector<int> ranks, int budget_ms, int grace_ms = 2000) {
  StopRequest stop{0, false, "stall", milliseconds(grace_ms)};
  stop.dump_ranks = std::move(ranks);
  stop.dump_budget = milliseconds(budget_ms);
  return stop;
}

TEST(AgentStackDumpTest, TheStopWaitsForTheStacksAndHeartbeatsGoOnMeanwhile) {
  AgentState s = Running(2);
  AgentActions out = s.OnStopCommand(StopWithStacks({1}, 10000));
  const DumpStacks* dump = Find<DumpStacks>(out);
  ASSERT_NE(dump, nullptr);
  EXPECT_THAT(dump->ranks, ElementsAre(1));
  EXPECT_EQ(dump->budget, milliseconds(10000));
  EXPECT_EQ(Count<StopWorkers>(out), 0) << "the workers must not stop before their stacks are taken";
  EXPECT_TRUE(s.dumping_stacks());

  // A dump longer than any heartbeat limit: every tick still sends a heartbeat.
  for (int t = 1000; t <= 8000; t += 1000) {
    s.OnLauncherMessage(At(t - 500));
    out = s.OnTick(At(t));
    EXPECT_EQ(Count<SendHeartbeat>(out), 1) << "at " << t << " ms";
    EXPECT_EQ(Count<StopWorkers>(out), 0);
    EXPECT_EQ(Count<ExitAgent>(out), 0);
  }

  out = s.OnStacksDumped();
  const StopWorkers* stop = Find<StopWorkers>(out);
  ASSERT_NE(stop, nullptr);
  EXPECT_EQ(stop->grace, milliseconds(2000));
  EXPECT_TRUE(stop->first);
  EXPECT_EQ(stop->why, "launcher: stall");
  EXPECT_FALSE(s.dumping_stacks());
  EXPECT_TRUE(s.OnStacksDumped().empty()) << "a second report of the same dump changes nothing";
}

TEST(AgentStackDumpTest, AWorkerEndingDuringTheDumpCountsAsStopped) {
  AgentState s = Running(2);
  s.OnStopCommand(StopWithStacks({1}, 10000));
  AgentActions out = s.OnWorkerExit(Exit(0, W_EXITCODE(0, SIGABRT)));
  const SendWorkerExit* exit = Find<SendWorkerExit>(out);
  ASSERT_NE(exit, nullptr);
  EXPECT_EQ(exit->outcome, WorkerOutcome::kStopped);
}

TEST(AgentStackDumpTest, StopsDuringTheDumpMergeIntoOneWithTheShortestGrace) {
  AgentState s = Running(1);
  s.OnStopCommand(StopWithStacks({0}, 10000, 5000));
  StopRequest again = StopWithStacks({0}, 10000, 1000);
  again.exit = true;
  EXPECT_EQ(Count<StopWorkers>(s.OnStopCommand(again)), 0);
  AgentActions out = s.OnStacksDumped();
  ASSERT_EQ(Count<StopWorkers>(out), 1);
  EXPECT_EQ(Find<StopWorkers>(out)->grace, milliseconds(1000));
  // The exit asked for meanwhile holds: the agent leaves once its worker ended.
  s.OnWorkerExit(Exit(0, W_EXITCODE(0, SIGTERM), true));
  EXPECT_EQ(Count<ExitAgent>(s.OnReportsDrained()), 1);
}

TEST(AgentStackDumpTest, AStopWithoutGraceOrASignalDoesNotWaitForTheStacks) {
  AgentState a = Running(1);
  a.OnStopCommand(StopWithStacks({0}, 10000));
  AgentActions out = a.OnStopCommand(StopWithStacks({0}, 10000, 0));
  ASSERT_EQ(Count<StopWorkers>(out), 1);
  EXPECT_EQ(Find<StopWorkers>(out)->grace, milliseconds(0));
  EXPECT_TRUE(a.OnStacksDumped().empty()) << "the held stop went out with the kill";

  AgentState b = Running(1);
  b.OnStopCommand(StopWithStacks({0}, 10000));
  EXPECT_EQ(Count<StopWorkers>(b.OnSignal(SIGTERM)), 1);
  EXPECT_TRUE(b.OnStacksDumped().empty());
}

TEST(AgentStackDumpTest, NoBudgetOrNoWorkerMeansNoDump) {
  AgentState s = Running(1);
  AgentActions out = s.OnStopCommand(StopWithStacks({0}, 0));
  EXPECT_EQ(Count<DumpStacks>(out), 0);
  EXPECT_EQ(Count<StopWorkers>(out), 1);

  AgentState idle = Running(0);
  EXPECT_EQ(Count<DumpStacks>(idle.OnStopCommand(StopWithStacks({0}, 10000))), 0);
}

TEST(AgentStackDumpTest, TheLauncherSilentDuringTheDumpStillFencesTheAgent) {
  AgentState s = Running(1);
  s.OnStopCommand(StopWithStacks({0}, 60000));
  AgentActions out;
  for (int t = 1000; t <= 7000 && Count<StopWorkers>(out) == 0; t += 1000) out = s.OnTick(At(t));
  ASSERT_EQ(Count<StopWorkers>(out), 1) << "the lease holds during a dump too";
  EXPECT_TRUE(s.fenced());
  EXPECT_TRUE(s.OnStacksDumped().empty());
}

TEST(AgentStackDumpTest, ANewRoundForgetsADumpOfTheRoundBefore) {
  AgentState s(AgentConfig{milliseconds(1000), milliseconds(5000), 3});
  s.OnSessionOpened(At(0));
  s.OnWorkersStarted(1, 0);
  s.OnStopCommand(StopWithStacks({0}, 10000));
  s.OnWorkerExit(Exit(0, W_EXITCODE(0, SIGKILL), true));
  s.OnReportsDrained();
  EXPECT_EQ(Count<StartWorkers>(s.OnStartRound(1)), 1);
  s.OnWorkersStarted(1, 0);
  EXPECT_FALSE(s.dumping_stacks());
  EXPECT_TRUE(s.OnStacksDumped().empty()) << "round 0's dump ending must not stop round 1";
}

}  // namespace
}  // namespace dlaunch
