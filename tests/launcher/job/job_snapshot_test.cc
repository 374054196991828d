// The live view's snapshot, read from JobState itself: node states, steps, rates and GPUs from
// heartbeats, the one silence rule, the ETA and the workers' phases, and after a restart the new
// round's members, slots and world size, with a stopped round's late messages never shown.
#include "launcher/job/job_snapshot.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "launcher/job/job_state.h"
#include "tests/testing/job_actions.h"

namespace dlaunch {
namespace {

v1::AgentMessage Heartbeat(int round, int workers, std::vector<std::pair<int, int64_t>> rank_steps,
                           int64_t total_steps = 0) {
  v1::AgentMessage m;
  m.set_round(round);
  v1::Heartbeat* hb = m.mutable_heartbeat();
  hb->set_workers_running(workers);
  for (auto [rank, step] : rank_steps) {
    v1::WorkerReport* r = hb->add_reports();
    r->set_kind(v1::WorkerReport::STEP);
    r->set_rank(rank);
    r->set_step(step);
    r->set_samples(64);
    r->set_interval_s(0.5);
    r->set_total_steps(total_steps);
  }
  return m;
}

v1::AgentMessage PhaseReport(int round, int rank, int64_t step, v1::WorkerReport::Phase phase) {
  v1::AgentMessage m;
  m.set_round(round);
  m.mutable_heartbeat()->set_workers_running(1);
  v1::WorkerReport* r = m.mutable_heartbeat()->add_reports();
  r->set_kind(v1::WorkerReport::PHASE);
  r->set_rank(rank);
  r->set_step(step);
  r->set_phase(phase);
  return m;
}

// `sizes[i]` slots on node i, the round closed at t=1.
std::unique_ptr<JobState> Closed(JobConfig c, const std::vector<int>& sizes) {
  auto state = std::make_unique<JobState>(c);
  state->OnStarted(std::vector<std::string>(c.hosts.size(), "dlaunch-agent"), 0);
  std::vector<Participant> nodes;
  for (size_t i = 0; i < sizes.size(); ++i) nodes.push_back(TestNode(static_cast<int>(i), sizes[i]));
  state->OnRendezvousClosed(AssignRound(0, nodes, 0), 1);
  return state;
}

class JobSnapshotTest : public ::testing::Test {
 protected:
  JobSnapshotTest() {
    JobConfig c = TestJobConfig(2);
    c.summary_interval_s = 1000;
    state_ = Closed(c, {2, 2});
  }
  std::unique_ptr<JobState> state_;
};

TEST_F(JobSnapshotTest, JoinedNodesWaitForTheirSessions) {
  v1::JobSnapshot s = state_->Snapshot(1);
  EXPECT_EQ(s.job_id(), "job-1");
  EXPECT_EQ(s.nodes_expected(), 2);
  EXPECT_EQ(s.world_size(), 4);
  EXPECT_EQ(s.round(), 0);
  ASSERT_EQ(s.nodes_size(), 2);
  EXPECT_EQ(s.nodes(0).host(), "n0");
  EXPECT_EQ(s.nodes(1).node_rank(), 1);
  EXPECT_EQ(s.nodes(0).slots(), 2);
  EXPECT_EQ(s.nodes(0).state(), "waiting");
  EXPECT_EQ(s.nodes(0).since_heartbeat_s(), -1);
  EXPECT_FALSE(s.ended());
}

// A script that sends no reports: its step and rate are unknown, not 0; a report that says 0
// is kept as 0.
TEST_F(JobSnapshotTest, NoReportsLeaveStepAndRateUnsetAReportedZeroIsKept) {
  state_->OnSessionOpened(0, 10, 1);
  state_->OnSessionOpened(1, 11, 1);
  state_->OnAgentMessage(0, Heartbeat(0, 2, {}), 2);
  state_->OnAgentMessage(1, Heartbeat(0, 2, {}), 2);
  v1::JobSnapshot s = state_->Snapshot(3);
  ASSERT_EQ(s.nodes_size(), 2);
  EXPECT_EQ(s.nodes(0).state(), "running");
  EXPECT_FALSE(s.nodes(0).has_step());
  EXPECT_FALSE(s.nodes(0).has_samples_per_sec());
  EXPECT_FALSE(s.has_step());
  EXPECT_FALSE(s.has_samples_per_sec());

  v1::AgentMessage zero = Heartbeat(0, 2, {{2, 0}});
  zero.mutable_heartbeat()->mutable_reports(0)->set_samples(0);
  state_->OnAgentMessage(1, zero, 3);
  s = state_->Snapshot(4);
  EXPECT_FALSE(s.nodes(0).has_step());
  ASSERT_TRUE(s.nodes(1).has_step());
  EXPECT_EQ(s.nodes(1).step(), 0);
  ASSERT_TRUE(s.nodes(1).has_samples_per_sec());
  EXPECT_DOUBLE_EQ(s.nodes(1).samples_per_sec(), 0);
  EXPECT_TRUE(s.has_step());
  EXPECT_TRUE(s.has_samples_per_sec());
}

TEST_F(JobSnapshotTest, HeartbeatsGiveStepsRatesAndGpus) {
  state_->OnSessionOpened(0, 10, 1);
  state_->OnSessionOpened(1, 11, 1);
  v1::AgentMessage hb = Heartbeat(0, 2, {{0, 10}, {1, 11}});
  hb.mutable_heartbeat()->add_gpus()->set_utilization_pct(75);
  state_->OnAgentMessage(0, hb, 2);
  state_->OnAgentMessage(1, Heartbeat(0, 2, {{2, 9}, {3, 9}}), 2.5);
  v1::JobSnapshot s = state_->Snapshot(3);
  EXPECT_EQ(s.nodes(0).state(), "running");
  EXPECT_EQ(s.nodes(0).step(), 11);
  EXPECT_EQ(s.nodes(1).step(), 9);
  EXPECT_DOUBLE_EQ(s.nodes(0).samples_per_sec(), 2 * 64 / 0.5);
  EXPECT_DOUBLE_EQ(s.nodes(0).since_heartbeat_s(), 1);
  EXPECT_DOUBLE_EQ(s.nodes(1).since_heartbeat_s(), 0.5);
  ASSERT_EQ(s.nodes(0).gpus_size(), 1);
  EXPECT_EQ(s.nodes(0).gpus(0).utilization_pct(), 75);
  EXPECT_EQ(s.nodes(1).gpus_size(), 0);
  EXPECT_EQ(s.step(), 11);
  EXPECT_DOUBLE_EQ(s.samples_per_sec(), 4 * 64 / 0.5);
  EXPECT_EQ(s.samples(), 4 * 64);
}

TEST_F(JobSnapshotTest, SilenceFollowsTheJobsLivenessPolicy) {
  // Heartbeat 1 s x 3 misses: silent after two intervals, long before the loss rule's three.
  state_->OnSessionOpened(0, 10, 1);
  state_->OnAgentMessage(0, Heartbeat(0, 2, {}), 2);
  EXPECT_EQ(state_->Snapshot(3.9).nodes(0).state(), "running");
  EXPECT_EQ(state_->Snapshot(4.1).nodes(0).state(), "silent");
}

TEST(JobSnapshotPolicyTest, SilentNeverComesLaterThanTheLossRule) {
  // heartbeat.misses 1: the launcher loses a node after one interval of silence, so the live
  // view must not call it running until two.
  JobConfig c = TestJobConfig(1);
  c.heartbeat_s = 2;
  c.heartbeat_misses = 1;
  auto state = Closed(c, {2});
  state->OnSessionOpened(0, 10, 1);
  state->OnAgentMessage(0, Heartbeat(0, 2, {}), 10);
  EXPECT_EQ(state->Snapshot(11.9).nodes(0).state(), "running");
  EXPECT_EQ(state->Snapshot(12.1).nodes(0).state(), "silent");
}

TEST_F(JobSnapshotTest, StatesFollowWorkerEndsAndSessionEnds) {
  state_->OnSessionOpened(0, 10, 1);
  state_->OnSessionOpened(1, 11, 1);
  state_->OnAgentMessage(0, Heartbeat(0, 2, {{0, 5}, {1, 5}}), 2);
  state_->OnAgentMessage(0, WorkerMessage(0, 0, v1::WorkerEvent::SUCCEEDED), 3);
  state_->OnAgentMessage(0, WorkerMessage(0, 1, v1::WorkerEvent::SUCCEEDED), 3);
  state_->OnAgentMessage(1, WorkerMessage(0, 2, v1::WorkerEvent::FAILED, 1), 3);
  v1::JobSnapshot s = state_->Snapshot(3);
  EXPECT_EQ(s.nodes(0).state(), "done");
  EXPECT_DOUBLE_EQ(s.nodes(0).samples_per_sec(), 0);  // ended ranks no longer count
  EXPECT_EQ(s.nodes(1).state(), "failed");
  state_->OnSessionEnded(0, 10, 4);
  EXPECT_EQ(state_->Snapshot(4).nodes(0).state(), "done");
}

TEST_F(JobSnapshotTest, SessionEndedWithoutRanksIsEnded) {
  state_->OnSessionOpened(0, 10, 1);
  state_->OnAgentMessage(0, Heartbeat(0, 0, {}), 2);
  EXPECT_EQ(state_->Snapshot(2).nodes(0).state(), "idle");
  state_->OnSessionEnded(0, 10, 2);
  EXPECT_EQ(state_->Snapshot(2).nodes(0).state(), "ended");
  EXPECT_EQ(state_->Snapshot(2).nodes(0).workers_running(), 0);
}

TEST_F(JobSnapshotTest, EtaFromTheStepRateCountsDownBetweenSteps) {
  state_->OnSessionOpened(0, 10, 1);
  state_->OnAgentMessage(0, Heartbeat(0, 2, {{0, 10}}), 10);
  EXPECT_EQ(state_->Snapshot(10).eta_s(), -1);  // no total yet
  state_->OnAgentMessage(0, Heartbeat(0, 2, {{0, 20}}, 110), 12);
  state_->OnAgentMessage(0, Heartbeat(0, 2, {{0, 30}}, 110), 14);
  v1::JobSnapshot s = state_->Snapshot(14);
  EXPECT_EQ(s.total_steps(), 110);
  // 20 steps in 4 s: the 80 left take 16 s.
  EXPECT_DOUBLE_EQ(s.eta_s(), 16);
  // No step for 5 s (an evaluation): the ETA keeps counting down instead of freezing at 16 s.
  EXPECT_DOUBLE_EQ(state_->Snapshot(19).eta_s(), 11);
  EXPECT_DOUBLE_EQ(state_->Snapshot(40).eta_s(), 0);
}

TEST_F(JobSnapshotTest, ThePhaseAwayFromTrainingIsShownForTheNodeAndTheJob) {
  state_->OnSessionOpened(0, 10, 1);
  state_->OnSessionOpened(1, 11, 1);
  state_->OnAgentMessage(0, PhaseReport(0, 0, 0, v1::WorkerReport::LOADING_DATA), 2);
  EXPECT_EQ(state_->Snapshot(2).nodes(0).phase(), "loading data");
  EXPECT_EQ(state_->Snapshot(2).phase(), "loading data");
  state_->OnAgentMessage(0, PhaseReport(0, 0, 0, v1::WorkerReport::TRAINING), 3);
  state_->OnAgentMessage(0, Heartbeat(0, 2, {{0, 180}, {1, 180}}, 180), 20);
  v1::JobSnapshot s = state_->Snapshot(20);
  EXPECT_EQ(s.nodes(0).phase(), "training");
  EXPECT_EQ(s.phase(), "");
  // Rank 1 evaluates after the last step; rank 0 still says training: the node shows evaluating.
  state_->OnAgentMessage(0, PhaseReport(0, 1, 180, v1::WorkerReport::EVALUATING), 21);
  s = state_->Snapshot(22);
  EXPECT_EQ(s.nodes(0).phase(), "evaluating");
  EXPECT_EQ(s.phase(), "evaluating");
  EXPECT_EQ(s.nodes(1).phase(), "");  // nothing reported
  // A phase report carries no samples: the rate and the sample count stay the training's.
  EXPECT_DOUBLE_EQ(s.nodes(0).samples_per_sec(), 2 * 64 / 0.5);
  EXPECT_EQ(s.samples(), 2 * 64);
}

TEST_F(JobSnapshotTest, TheEndIsInTheLastSnapshot) {
  for (int n = 0; n < 2; ++n) state_->OnSessionOpened(n, 10 + n, 1);
  for (int r = 0; r < 4; ++r) {
    state_->OnAgentMessage(r / 2, WorkerMessage(0, r, v1::WorkerEvent::SUCCEEDED), 2);
  }
  state_->OnSessionEnded(0, 10, 3);
  state_->OnSessionEnded(1, 11, 3);
  for (int i = 0; i < 2; ++i) state_->OnLauncherExited(i, 0, {}, 3);
  ASSERT_TRUE(state_->finished());
  v1::JobSnapshot s = state_->Snapshot(3);
  EXPECT_TRUE(s.ended());
  EXPECT_EQ(s.exit_code(), 0);
}

// Nodes 0, 1, 2 of one rank each and spare node 3 of two. Node 1's agent dies in round 0;
// round 1 keeps nodes 0 and 2 in their order and the spare takes the end: node 2 moves into
// node rank 1, the spare runs ranks 2 and 3, and the world grows from 3 to 4.
TEST(JobSnapshotRestartTest, ARestartShowsTheNewRoundsMembersSlotsAndWorldSize) {
  JobConfig c = TestJobConfig(3);
  c.summary_interval_s = 1000;
  c.restarts.max_restarts = 2;
  auto state = Closed(c, {1, 1, 1});
  for (int i = 0; i < 3; ++i) state->OnSessionOpened(i, 100 + i, 1);
  state->OnSpareJoined(TestNode(3, 2), 3, 1.2);
  state->OnSessionOpened(3, 103, 1.3);
  EXPECT_EQ(state->Snapshot(1.4).nodes(3).state(), "spare");
  EXPECT_EQ(state->Snapshot(1.4).nodes(3).slots(), 0);
  EXPECT_EQ(state->Snapshot(1.4).nodes(3).node_rank(), -1);
  for (int i = 0; i < 3; ++i) state->OnAgentMessage(i, WorkerMessage(0, i, v1::WorkerEvent::STARTED), 1.5);

  state->OnSessionEnded(1, 101, 2);
  state->OnAgentMessage(0, RoundEndedMessage(0, 40000), 2.1);
  state->OnAgentMessage(2, RoundEndedMessage(0, 40002), 2.1);
  JobActions a = state->OnHealthCheck(10);
  auto start = All<SendStartRound>(a);
  ASSERT_EQ(start.size(), 1u);
  ASSERT_THAT(start[0].node_ids, ::testing::ElementsAre(0, 2, 3));
  state->OnAgentMessage(0, WorkerMessage(1, 0, v1::WorkerEvent::STARTED), 11);
  state->OnAgentMessage(2, WorkerMessage(1, 1, v1::WorkerEvent::STARTED), 11);
  state->OnAgentMessage(3, WorkerMessage(1, 2, v1::WorkerEvent::STARTED), 11);
  state->OnAgentMessage(3, WorkerMessage(1, 3, v1::WorkerEvent::STARTED), 11);
  state->OnAgentMessage(2, Heartbeat(1, 1, {{1, 7}}), 12);
  state->OnAgentMessage(3, Heartbeat(1, 2, {{2, 7}, {3, 7}}), 12);
  // A late heartbeat of round 0 from node 0: its step belongs to a stopped round.
  state->OnAgentMessage(0, Heartbeat(0, 1, {{0, 99}}), 12);

  v1::JobSnapshot s = state->Snapshot(12.5);
  EXPECT_EQ(s.round(), 1);
  EXPECT_EQ(s.world_size(), 4);
  ASSERT_EQ(s.nodes_size(), 4);
  EXPECT_EQ(s.nodes(1).state(), "gone");
  EXPECT_EQ(s.nodes(1).node_rank(), -1);
  EXPECT_EQ(s.nodes(1).slots(), 0);
  EXPECT_EQ(s.nodes(2).node_rank(), 1);
  EXPECT_EQ(s.nodes(2).step(), 7);
  EXPECT_EQ(s.nodes(3).state(), "running");
  EXPECT_EQ(s.nodes(3).node_rank(), 2);
  EXPECT_EQ(s.nodes(3).slots(), 2);
  EXPECT_EQ(s.nodes(3).workers_running(), 2);
  EXPECT_EQ(s.nodes(3).step(), 7);
  EXPECT_EQ(s.nodes(0).step(), 0);
  EXPECT_EQ(s.step(), 7);
}

}  // namespace
}  // namespace dlaunch
