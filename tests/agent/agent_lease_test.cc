// The agent's lease (AgentState with LivenessPolicy): it runs from the newest of the agent's own
// messages the launcher echoed, never from when a command arrived, so a cut-off agent stops its
// workers within LivenessPolicy::workers_gone_after of the last message the launcher heard.
// The launcher's side of the contract is tests/launcher/run/job_state_ordering_test.cc.
#include <string>

#include "agent/agent_state.h"
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

TEST(AgentLeaseTest, ALateCommandDoesNotRenewTheLease) {
  AgentState s = Running(1000, 3, 2000);
  for (int t = 1000; t <= 10000; t += 1000) {
    s.OnLauncherMessage(At(t - 1000));  // the launcher echoes the heartbeat of a second ago
    ASSERT_EQ(Count<StopWorkers>(s.OnTick(At(t))), 0) << t;
  }
  // Cut off after the echo of t=9000 arrived. A ping held up in the link arrives at 13000; it
  // echoes a message of 8500, older than what the agent already has.
  AgentActions out;
  int fenced_at = 0;
  for (int t = 11000; t <= 20000 && fenced_at == 0; t += 1000) {
    if (t == 13000) s.OnLauncherMessage(At(8500));
    out = s.OnTick(At(t));
    if (Count<StopWorkers>(out) > 0) fenced_at = t;
  }
  ASSERT_GT(fenced_at, 0);
  EXPECT_TRUE(s.fenced());
  EXPECT_EQ(Find<StopWorkers>(out)->grace, milliseconds(2000));
  // The launcher heard the agent's message of 9000 (or later, never earlier): it counts on the
  // workers being gone by then.
  const LivenessPolicy policy(milliseconds(1000), 3);
  EXPECT_LE(At(fenced_at) + milliseconds(2000) + LivenessPolicy::kKillSlack,
            At(9000) + policy.workers_gone_after(milliseconds(2000)));
}

TEST(AgentLeaseTest, TheSpecsMissesSetTheLeaseAsTheyDoTheLaunchersLossRule) {
  // 2 s x 5: the launcher loses a node after 10 s; the agent's lease is no shorter.
  AgentState s = Running(2000, 5, 0);
  EXPECT_EQ(s.launcher_silence_limit(), milliseconds(10000));
  s.OnLauncherMessage(At(0));
  for (int t = 2000; t <= 10000; t += 2000) {
    ASSERT_EQ(Count<StopWorkers>(s.OnTick(At(t))), 0) << t;
  }
  EXPECT_EQ(Count<StopWorkers>(s.OnTick(At(12000))), 1);
}

}  // namespace
}  // namespace dlaunch
