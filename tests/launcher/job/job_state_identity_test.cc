// JobState's journal after a restart that moves a node to another node rank: every record names
// the node by its id and its rank in the round, and the crash-loop rule counts node ids.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "launcher/job/job_state.h"
#include "tests/testing/job_actions.h"

namespace dlaunch {
namespace {

using ::testing::ElementsAre;

// Rank `rank` reported step `step` (no rank: an empty heartbeat).
v1::AgentMessage Progress(int round, int rank, int step) {
  v1::AgentMessage m;
  m.set_round(round);
  m.mutable_heartbeat()->set_workers_running(1);
  if (rank >= 0) {
    v1::WorkerReport* r = m.mutable_heartbeat()->add_reports();
    r->set_rank(rank);
    r->set_step(step);
  }
  return m;
}

std::vector<v1::JobEvent> Journal(const JobActions& actions) {
  std::vector<v1::JobEvent> out;
  for (const auto& a : All<AppendEvent>(actions)) out.push_back(a.event);
  return out;
}

// Nodes 0, 1, 2 of one rank each and spare node 3. Node 1's agent dies in round 0; round 1
// keeps nodes 0 and 2 in their order and the spare fills the end: node 2 has node rank 1 and
// runs rank 1, node 3 runs rank 2.
class JobStateIdentityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    JobConfig c = TestJobConfig(3);
    c.summary_interval_s = 1000;
    c.restarts.max_restarts = 2;
    c.progress.stall_timeout_s = 5;
    c.progress.startup_timeout_s = 5;
    state_ = std::make_unique<JobState>(c);
    state_->OnStarted(std::vector<std::string>(3, "dlaunch-agent"), 0);
    RoundResult r;
    for (int i = 0; i < 3; ++i) {
      r.nodes.push_back(TestNode(i));
      r.assignments.push_back({i, i, 1});
    }
    r.world_size = 3;
    r.master_addr = "10.0.0.0";
    r.master_port = 29500;
    state_->OnRendezvousClosed(r, 1);
    for (int i = 0; i < 3; ++i) state_->OnSessionOpened(i, 100 + i, 1);
    state_->OnSpareJoined(TestNode(3), 3, 1.2);
    state_->OnSessionOpened(3, 103, 1.3);
    for (int i = 0; i < 3; ++i) state_->OnAgentMessage(i, WorkerMessage(0, i, v1::WorkerEvent::STARTED), 1.5);

    JobActions a = state_->OnSessionEnded(1, 101, 2);
    Append(a, state_->OnAgentMessage(0, RoundEndedMessage(0, 40000), 2.1));
    Append(a, state_->OnAgentMessage(2, RoundEndedMessage(0, 40002), 2.1));
    // Long after any wait for the lost node's workers to be gone (no tick: no one goes silent).
    Append(a, state_->OnHealthCheck(10));
    auto start = All<SendStartRound>(a);
    ASSERT_EQ(start.size(), 1u);
    ASSERT_THAT(start[0].node_ids, ElementsAre(0, 2, 3));
    state_->OnAgentMessage(0, WorkerMessage(1, 0, v1::WorkerEvent::STARTED), 11);
    state_->OnAgentMessage(2, WorkerMessage(1, 1, v1::WorkerEvent::STARTED), 11);
    state_->OnAgentMessage(3, WorkerMessage(1, 2, v1::WorkerEvent::STARTED), 11);
  }
  std::unique_ptr<JobState> state_;
};

TEST_F(JobStateIdentityTest, AFailureNamesTheNodeThatRanTheRankByIdAndRank) {
  std::vector<v1::JobEvent> events =
      Journal(state_->OnAgentMessage(2, WorkerMessage(1, 1, v1::WorkerEvent::FAILED, 3), 12));
  bool failed = false, detected = false;
  for (const v1::JobEvent& e : events) {
    EXPECT_EQ(e.round(), 1) << e.DebugString();
    if (e.has_worker_failed()) {
      failed = true;
      EXPECT_EQ(e.worker_failed().node_id(), 2);
      EXPECT_EQ(e.worker_failed().node_rank(), 1);
      EXPECT_EQ(e.worker_failed().host(), "n2");
    }
    if (e.has_failure_detected()) {
      detected = true;
      EXPECT_EQ(e.failure_detected().failure().node_id(), 2);
      EXPECT_EQ(e.failure_detected().failure().node_rank(), 1);
    }
  }
  EXPECT_TRUE(failed && detected) << events.size();
}

TEST_F(JobStateIdentityTest, AHangNamesTheNodeThatRanTheRankByIdAndRank) {
  // Ranks 0 and 2 make progress; rank 1, on node 2, never does.
  for (double t : {12.0, 14.0, 16.0}) {
    state_->OnAgentMessage(0, Progress(1, 0, static_cast<int>(t)), t);
    state_->OnAgentMessage(2, Progress(1, -1, 0), t);
    state_->OnAgentMessage(3, Progress(1, 2, static_cast<int>(t)), t);
  }
  JobActions a = state_->OnHealthCheck(16.5);
  bool hang = false;
  for (const v1::JobEvent& e : Journal(a)) {
    if (!e.has_hang_detected()) continue;
    hang = true;
    EXPECT_EQ(e.round(), 1);
    EXPECT_EQ(e.hang_detected().rank(), 1);
    EXPECT_EQ(e.hang_detected().node_id(), 2);
    EXPECT_EQ(e.hang_detected().node_rank(), 1);
    EXPECT_EQ(e.hang_detected().host(), "n2");
  }
  EXPECT_TRUE(hang) << Events(a) << Printed(a, true);
}

}  // namespace
}  // namespace dlaunch
