// The agent's lease (AgentState with LivenessPolicy): it runs from the newest of the agent's own
// messages the launcher echoed, never from when a command arrived, so a cut-off agent kills its
// workers within LivenessPolicy::workers_gone_after of the last message the launcher heard.
// The launcher's side of the contract is tests/launcher/job/job_state_ordering_test.cc.
#include <string>

#include "agent/core/agent_state.h"
#include "common/liveness_policy.h"
#include "gtest/gtest.h"
#include "tests/testing/agent_actions.h"

namespace dlaunch {
namespace {

using std::chrono::milliseconds;

AgentState Running(int heartbeat_ms, int misses, int grace_ms) {
  AgentConfig c{milliseconds(heartbeat_ms), milliseconds(grace_ms)};
  c.heartbeat_misses = misses;
  AgentState s(c);
  s.OnSessionOpened(At(0));
  s.OnWorkersStarted(1, 0);
  return s;
}

// What NodeAgent's lease timer does: fires at lease_due() (plus `late`) and hands it over.
AgentActions FireLeaseTimer(AgentState& s, milliseconds late = milliseconds(0)) {
  const std::optional<AgentState::Time> due = s.lease_due();
  if (!due) return {};
  return s.OnLeaseDue(*due + late, *due);
}

TEST(AgentLeaseTest, ALateCommandDoesNotRenewTheLease) {
  AgentState s = Running(1000, 3, 2000);
  for (int t = 1000; t <= 10000; t += 1000) {
    s.OnLauncherMessage(At(t - 1000));  // the launcher echoes the heartbeat of a second ago
    ASSERT_EQ(Count<StopWorkers>(s.OnTick(At(t))), 0) << t;
    ASSERT_EQ(Count<StopWorkers>(s.OnLeaseDue(At(t), At(t))), 0) << t;
  }
  // Cut off after the echo of t=9000 arrived. A ping held up in the link arrives at 12000; it
  // echoes a message of 8500, older than what the agent already has.
  for (int t = 11000; t <= 12000; t += 1000) {
    if (t == 12000) s.OnLauncherMessage(At(8500));
    ASSERT_EQ(Count<StopWorkers>(s.OnTick(At(t))), 0) << t;
  }
  ASSERT_TRUE(s.lease_due().has_value());
  const AgentState::Time due = *s.lease_due();
  EXPECT_EQ(due, At(9000) + s.launcher_silence_limit() + milliseconds(1));
  const AgentActions out = FireLeaseTimer(s);
  ASSERT_EQ(Count<StopWorkers>(out), 1);
  EXPECT_TRUE(s.fenced());
  // No grace: the workers and whatever they left behind are SIGKILLed at once.
  EXPECT_EQ(Find<StopWorkers>(out)->grace, milliseconds(0));
  EXPECT_TRUE(Find<StopWorkers>(out)->fenced);
  // The launcher heard the agent's message of 9000 (or later, never earlier): it counts on the
  // workers being gone by then, the lease check's slack and a kill after the lease.
  const LivenessPolicy policy(milliseconds(1000), 3);
  EXPECT_LE(due + policy.lease_check_slack() + LivenessPolicy::kKillSlack,
            At(9000) + policy.workers_gone_after() + milliseconds(1));
  EXPECT_FALSE(s.lease_due().has_value()) << "no lease once fenced";
}

TEST(AgentLeaseTest, TheSpecsMissesSetTheLeaseAsTheyDoTheLaunchersLossRule) {
  // 2 s x 5: the launcher loses a node after 10 s; the agent's lease is half a second longer.
  AgentState s = Running(2000, 5, 0);
  EXPECT_EQ(s.launcher_silence_limit(), milliseconds(10500));
  s.OnLauncherMessage(At(0));
  for (int t = 2000; t <= 10000; t += 2000) {
    ASSERT_EQ(Count<StopWorkers>(s.OnTick(At(t))), 0) << t;
  }
  // The heartbeat of 12000 finds it too, if no lease timer did first.
  EXPECT_EQ(Count<StopWorkers>(s.OnTick(At(12000))), 1);
}

TEST(AgentLeaseTest, AnEchoMovesTheLeasesEndAndAnEarlyTimerFencesNothing) {
  AgentState s = Running(1000, 3, 2000);
  const AgentState::Time first_due = *s.lease_due();
  s.OnLauncherMessage(At(2000));
  EXPECT_EQ(*s.lease_due(), At(2000) + s.launcher_silence_limit() + milliseconds(1));
  // The timer armed for the old end fires: the lease has not run out.
  EXPECT_EQ(Count<StopWorkers>(s.OnLeaseDue(first_due, first_due)), 0);
  EXPECT_FALSE(s.fenced());
  EXPECT_EQ(Count<StopWorkers>(FireLeaseTimer(s)), 1);
}

TEST(AgentLeaseTest, ATimerLateByMoreThanAHeartbeatWaitsTwoHeartbeatsBeforeItJudges) {
  // The agent's own loop stalled: echoes of its last heartbeats may be queued behind the timer.
  AgentState s = Running(1000, 3, 2000);
  const AgentState::Time due = *s.lease_due();
  EXPECT_EQ(Count<StopWorkers>(s.OnLeaseDue(due + milliseconds(5000), due)), 0);
  EXPECT_FALSE(s.fenced());
  EXPECT_EQ(*s.lease_due(), due + milliseconds(5000) + milliseconds(2000));
  // An echo of a heartbeat sent after the stall renews it.
  s.OnLauncherMessage(due + milliseconds(5500));
  EXPECT_EQ(Count<StopWorkers>(FireLeaseTimer(s)), 1) << "fenced once that echo is old too";
}

TEST(AgentLeaseTest, AFencedAgentKillsAtOnceEvenWhileAStopsGraceRuns) {
  AgentState s = Running(1000, 3, 10000);
  // The launcher asked for a stop with exit and a 10 s grace, then went silent.
  StopRequest stop;
  stop.exit = true;
  stop.grace = milliseconds(10000);
  AgentActions asked = s.OnStopCommand(stop);
  ASSERT_EQ(Find<StopWorkers>(asked)->grace, milliseconds(10000));
  const AgentActions out = FireLeaseTimer(s);
  ASSERT_EQ(Count<StopWorkers>(out), 1);
  EXPECT_EQ(Find<StopWorkers>(out)->grace, milliseconds(0));
  EXPECT_TRUE(Find<StopWorkers>(out)->fenced);
}

TEST(AgentLeaseTest, AFencedAgentBetweenRoundsExitsAtOnce) {
  AgentConfig c{milliseconds(1000), milliseconds(2000)};
  c.max_restarts = 1;
  AgentState s(c);
  s.OnSessionOpened(At(0));
  s.OnWorkersStarted(1, 0);
  ChildExit exit;
  exit.rank = 0;
  exit.local_rank = 0;
  exit.pid = 42;
  s.OnWorkerExit(exit);
  s.OnReportsDrained();
  ASSERT_EQ(s.workers_running(), 0);
  const AgentActions out = FireLeaseTimer(s);
  EXPECT_TRUE(s.fenced());
  EXPECT_EQ(Count<StopWorkers>(out), 0) << "no worker runs";
  EXPECT_EQ(Count<ExitAgent>(out), 1);
}

}  // namespace
}  // namespace dlaunch
