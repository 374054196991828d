// No two rounds at once: JobState starts the next round only once every member that left the
// stopped round without its RoundEnded has surely stopped its workers (LivenessPolicy), with
// synthetic times. The agent's side of the same contract is in tests/agent/agent_lease_test.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/liveness_policy.h"
#include "launcher/run/job_state.h"
#include "tests/testing/job_actions.h"

namespace dlaunch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Participant Node(int i) {
  Participant p;
  p.agent_id = "a" + std::to_string(i);
  p.host = "h" + std::to_string(i);
  p.addr = "10.0.0." + std::to_string(i);
  p.slots = 1;
  p.worker_port = 29500 + i;
  return p;
}

v1::AgentMessage Heartbeat(int round) {
  v1::AgentMessage m;
  m.set_round(round);
  m.mutable_heartbeat()->set_workers_running(1);
  return m;
}

v1::AgentMessage RoundEnded(int round) {
  v1::AgentMessage m;
  m.set_round(round);
  m.mutable_round_ended()->set_round(round);
  m.mutable_round_ended()->set_worker_port(40000);
  return m;
}

// 3 nodes of 1 rank, heartbeat 1 s x 3, grace 2 s, one restart, nodes.min 2: the fault suite's
// partition scenario.
class JobStateOrderingTest : public ::testing::Test {
 protected:
  JobStateOrderingTest() {
    JobConfig c = TestJobConfig(3);
    c.summary_interval_s = 1000;
    c.restarts.max_restarts = 1;
    c.min_nodes = 2;
    state_ = std::make_unique<JobState>(c);
    state_->OnStarted({"a", "a", "a"}, 0);
    RoundResult r;
    for (int i = 0; i < 3; ++i) {
      r.nodes.push_back(Node(i));
      r.assignments.push_back({i, i, 1});
    }
    r.world_size = 3;
    state_->OnRendezvousClosed(r, 1);
    for (int i = 0; i < 3; ++i) state_->OnSessionOpened(i, 100 + i, 1);
  }

  // Heartbeats of `nodes` every 0.5 s in [from, to], with ticks; what the launcher did.
  JobActions Run(const std::vector<int>& nodes, double from, double to) {
    JobActions out;
    for (double t = from; t <= to + 1e-9; t += 0.5) {
      for (int n : nodes) state_->OnAgentMessage(n, Heartbeat(0), t);
      JobActions tick = state_->OnTick(t);
      out.insert(out.end(), tick.begin(), tick.end());
    }
    return out;
  }

  std::unique_ptr<JobState> state_;
  const LivenessPolicy policy_{std::chrono::milliseconds(1000), 3};
};

TEST_F(JobStateOrderingTest, ACutOffNodesWorkersAreSurelyStoppedBeforeTheNextRoundStarts) {
  Run({0, 1, 2}, 1, 10);
  // Node 2 is cut off after its heartbeat at t=10: lost after 3 s of silence.
  JobActions lost = Run({0, 1}, 10.5, 13.5);
  ASSERT_THAT(Printed(lost), HasSubstr("node silent"));
  state_->OnAgentMessage(0, RoundEnded(0), 13.6);
  state_->OnAgentMessage(1, RoundEnded(0), 13.6);
  // Its agent heard nothing newer than its message of t=10 echoed: it fences within its lease
  // (and a heartbeat to notice), then SIGTERM, the grace, SIGKILL.
  const double gone_s =
      10 + std::chrono::duration<double>(policy_.workers_gone_after(std::chrono::seconds(2))).count();
  JobActions all;
  for (double t = 13.7; t < gone_s - 1e-6; t += 0.1) {
    JobActions step = state_->OnHealthCheck(t);
    all.insert(all.end(), step.begin(), step.end());
    EXPECT_TRUE(All<SendStartRound>(step).empty()) << "round 1 started at " << t
                                                   << " s while node 2's workers may still run";
  }
  EXPECT_THAT(Printed(all), HasSubstr("once the lost nodes' workers are surely stopped"));
  EXPECT_FALSE(All<ArmHealthCheck>(all).empty());
  EXPECT_DOUBLE_EQ(All<ArmHealthCheck>(all).back().at_s, gone_s) << "woken up in time to start";
  JobActions start = state_->OnHealthCheck(gone_s);
  ASSERT_EQ(All<SendStartRound>(start).size(), 1u);
  EXPECT_THAT(All<SendStartRound>(start)[0].node_ids, ElementsAre(0, 1));
}

TEST_F(JobStateOrderingTest, MembersThatEndedTheirRoundDoNotHoldTheNextOneBack) {
  Run({0, 1, 2}, 1, 3);
  // A crash on node 2: every member sends RoundEnded, so the next round starts at once.
  v1::AgentMessage failed;
  failed.mutable_worker()->set_rank(2);
  failed.mutable_worker()->set_state(v1::WorkerEvent::FAILED);
  failed.mutable_worker()->set_exit_code(1);
  state_->OnAgentMessage(2, failed, 3.1);
  for (int n : {0, 1}) state_->OnAgentMessage(n, RoundEnded(0), 3.2);
  JobActions start = state_->OnAgentMessage(2, RoundEnded(0), 3.3);
  EXPECT_EQ(All<SendStartRound>(start).size(), 1u);
}

TEST_F(JobStateOrderingTest, AnAgentWhoseSessionEndedHoldsTheNextRoundForTheGrace) {
  Run({0, 1, 2}, 1, 3);
  // Its stream ended: a dead agent took its workers with it, a live one saw the end too and
  // stops them within the grace.
  state_->OnSessionEnded(2, 102, 3.1);
  state_->OnAgentMessage(0, RoundEnded(0), 3.2);
  JobActions early = state_->OnAgentMessage(1, RoundEnded(0), 3.2);
  EXPECT_TRUE(All<SendStartRound>(early).empty());
  const double gone_s = 3.1 + 2 + std::chrono::duration<double>(LivenessPolicy::kKillSlack).count();
  EXPECT_TRUE(All<SendStartRound>(state_->OnHealthCheck(gone_s - 0.01)).empty());
  EXPECT_EQ(All<SendStartRound>(state_->OnHealthCheck(gone_s)).size(), 1u);
}

}  // namespace
}  // namespace dlaunch
