// No two rounds at once: the next round's workers start only once every member that left the
// stopped round without its RoundEnded has surely stopped its own (LivenessPolicy), with
// synthetic times. Its StartRound goes out RoundCoordinator::kStartLeadS ahead, carrying when
// they may start. The agent's side of the same contract is in tests/agent/core/agent_lease_test.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/liveness_policy.h"
#include "launcher/job/job_state.h"
#include "launcher/job/round_coordinator.h"
#include "tests/testing/job_actions.h"

namespace dlaunch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

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
  // Its agent heard nothing newer than its message of t=10 echoed: it fences within its lease
  // (and the lease check's slack), then SIGKILL; the stop grace is not waited for.
  const double gone_s = 10 + std::chrono::duration<double>(policy_.workers_gone_after()).count();
  // The round goes out at most kStartLeadS ahead of that, saying when its workers may start:
  // here as the last member ends its round (13.6 s is past 14 s - 1 s).
  JobActions all = state_->OnAgentMessage(0, RoundEnded(0), 13.6);
  JobActions last = state_->OnAgentMessage(1, RoundEnded(0), 13.6);
  all.insert(all.end(), last.begin(), last.end());
  std::vector<SendStartRound> start = All<SendStartRound>(all);
  double sent_s = 13.6;
  for (double t = 13.7; t <= gone_s + 1e-6 && start.empty(); t += 0.1) {
    JobActions step = state_->OnHealthCheck(t);
    all.insert(all.end(), step.begin(), step.end());
    start = All<SendStartRound>(step);
    sent_s = t;
  }
  EXPECT_THAT(Printed(all), HasSubstr("once the lost nodes' workers are surely stopped"));
  ASSERT_EQ(start.size(), 1u);
  EXPECT_THAT(start[0].node_ids, ElementsAre(0, 1));
  EXPECT_GE(sent_s, gone_s - RoundCoordinator::kStartLeadS - 1e-6);
  EXPECT_LT(sent_s, gone_s) << "sent ahead";
  EXPECT_DOUBLE_EQ(start[0].workers_start_at_s, gone_s)
      << "its workers start only once node 2's are surely stopped";
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
  ASSERT_EQ(All<SendStartRound>(start).size(), 1u);
  EXPECT_LE(All<SendStartRound>(start)[0].workers_start_at_s, 3.3) << "at once";
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
  const double send_s = gone_s - RoundCoordinator::kStartLeadS;
  EXPECT_TRUE(All<SendStartRound>(state_->OnHealthCheck(send_s - 0.01)).empty());
  auto start = All<SendStartRound>(state_->OnHealthCheck(send_s));
  ASSERT_EQ(start.size(), 1u);
  EXPECT_DOUBLE_EQ(start[0].workers_start_at_s, gone_s);
}

TEST_F(JobStateOrderingTest, ASilentNodeIsLostOnceWhileItsRoundStops) {
  Run({0, 1, 2}, 1, 10);
  // Node 2 goes silent; the others keep beating while the round stops, tick after tick.
  JobActions out = Run({0, 1}, 10.5, 16);
  const std::string events = Events(out);
  size_t lost = 0;
  for (size_t at = events.find("\"node_lost\""); at != std::string::npos;
       at = events.find("\"node_lost\"", at + 1)) {
    ++lost;
  }
  EXPECT_EQ(lost, 1u) << events;
}

TEST_F(JobStateOrderingTest, ALostRelaysNodesKeepTheirPlacesUntilTheyAreBack) {
  Run({0, 1, 2}, 1, 3);
  std::optional<JobActions> moved = state_->OnRelayLost("relay 0", {0, 2}, 3.0);
  ASSERT_TRUE(moved.has_value());
  const JobActions& lost = *moved;
  EXPECT_THAT(Events(lost), HasSubstr("\"relay_lost\":{\"relay\":\"relay 0\",\"nodes\":2"));
  auto states = [&](double now_s) {
    std::vector<std::string> out;
    const v1::JobSnapshot snapshot = state_->Snapshot(now_s);
    for (const v1::NodeSnapshot& n : snapshot.nodes()) out.push_back(n.state());
    return out;
  };
  EXPECT_THAT(states(3.1), ElementsAre("moving", "running", "moving"));
  JobActions first = state_->OnSessionResumed(2, 3.2);
  EXPECT_THAT(Events(first), HasSubstr("\"session_resumed\":{\"node_id\":2"));
  EXPECT_THAT(Printed(first), Not(HasSubstr("is back")));
  EXPECT_THAT(states(3.3), ElementsAre("moving", "running", "running"));
  JobActions last = state_->OnSessionResumed(0, 3.5);
  EXPECT_THAT(Printed(last), HasSubstr("every node of relay 0 is back, the last after 0.50 s"));
  // Within the loss limit of their last messages nobody is lost, and no round stops.
  JobActions after = Run({0, 1, 2}, 3.5, 6);
  EXPECT_THAT(Events(after), Not(HasSubstr("node_lost")));
}

}  // namespace
}  // namespace dlaunch
