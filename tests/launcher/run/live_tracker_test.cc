#include "launcher/run/live_tracker.h"

#include <gtest/gtest.h>

namespace dlaunch {
namespace {

v1::JoinResponse Place(int node, int local_world_size = 2) {
  v1::JoinResponse p;
  p.set_node_id(node);
  p.set_local_world_size(local_world_size);
  p.set_world_size(4);
  p.set_heartbeat_ms(1000);
  return p;
}

v1::AgentMessage Heartbeat(int workers, std::vector<std::pair<int, int64_t>> rank_steps,
                           int64_t total_steps = 0) {
  v1::AgentMessage m;
  v1::Heartbeat* hb = m.mutable_heartbeat();
  hb->set_workers_running(workers);
  for (auto [rank, step] : rank_steps) {
    v1::WorkerReport* r = hb->add_reports();
    r->set_rank(rank);
    r->set_step(step);
    r->set_samples(64);
    r->set_interval_s(0.5);
    r->set_total_steps(total_steps);
  }
  return m;
}

v1::AgentMessage WorkerEvent(int rank, v1::WorkerEvent::State state) {
  v1::AgentMessage m;
  m.mutable_worker()->set_rank(rank);
  m.mutable_worker()->set_state(state);
  return m;
}

class LiveTrackerTest : public ::testing::Test {
 protected:
  LiveTrackerTest() : tracker_("job-1", 2) {
    tracker_.OnJoined("a", Place(0));
    tracker_.OnJoined("b", Place(1));
  }
  LiveTracker tracker_;
};

TEST_F(LiveTrackerTest, JoinedNodesWaitForTheirSessions) {
  v1::JobSnapshot s = tracker_.Snapshot(1);
  EXPECT_EQ(s.job_id(), "job-1");
  EXPECT_EQ(s.nodes_expected(), 2);
  EXPECT_EQ(s.world_size(), 4);
  ASSERT_EQ(s.nodes_size(), 2);
  EXPECT_EQ(s.nodes(0).host(), "a");
  EXPECT_EQ(s.nodes(0).slots(), 2);
  EXPECT_EQ(s.nodes(0).state(), "waiting");
  EXPECT_EQ(s.nodes(0).since_heartbeat_s(), -1);
  EXPECT_FALSE(s.ended());
}

TEST_F(LiveTrackerTest, HeartbeatsGiveStepsRatesAndGpus) {
  tracker_.OnSessionOpened(0, 1);
  tracker_.OnSessionOpened(1, 1);
  v1::AgentMessage hb = Heartbeat(2, {{0, 10}, {1, 11}});
  v1::GpuSample* g = hb.mutable_heartbeat()->add_gpus();
  g->set_utilization_pct(75);
  tracker_.OnAgentMessage(0, hb, 2);
  tracker_.OnAgentMessage(1, Heartbeat(2, {{2, 9}, {3, 9}}), 2.5);
  v1::JobSnapshot s = tracker_.Snapshot(3);
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

TEST_F(LiveTrackerTest, NodeWithoutHeartbeatForTwoIntervalsIsSilent) {
  tracker_.OnSessionOpened(0, 1);
  tracker_.OnAgentMessage(0, Heartbeat(2, {}), 2);
  EXPECT_EQ(tracker_.Snapshot(3.9).nodes(0).state(), "running");
  EXPECT_EQ(tracker_.Snapshot(4.1).nodes(0).state(), "silent");
}

TEST(LiveTrackerPolicyTest, SilentNeverComesLaterThanTheLossRule) {
  // heartbeat.misses 1: the launcher loses a node after one interval of silence, so the live
  // view must not call it running until two.
  LiveTracker tracker("job-1", 1);
  v1::JoinResponse place = Place(0);
  place.set_heartbeat_ms(2000);
  place.set_heartbeat_misses(1);
  tracker.OnJoined("a", place);
  tracker.OnSessionOpened(0, 1);
  tracker.OnAgentMessage(0, Heartbeat(2, {}), 10);
  EXPECT_EQ(tracker.Snapshot(11.9).nodes(0).state(), "running");
  EXPECT_EQ(tracker.Snapshot(12.1).nodes(0).state(), "silent");
}

TEST_F(LiveTrackerTest, StatesFollowWorkerEndsAndSessionEnds) {
  tracker_.OnSessionOpened(0, 1);
  tracker_.OnSessionOpened(1, 1);
  tracker_.OnAgentMessage(0, Heartbeat(2, {{0, 5}, {1, 5}}), 2);
  tracker_.OnAgentMessage(0, WorkerEvent(0, v1::WorkerEvent::SUCCEEDED), 3);
  tracker_.OnAgentMessage(0, WorkerEvent(1, v1::WorkerEvent::SUCCEEDED), 3);
  tracker_.OnAgentMessage(1, WorkerEvent(2, v1::WorkerEvent::FAILED), 3);
  v1::JobSnapshot s = tracker_.Snapshot(3);
  EXPECT_EQ(s.nodes(0).state(), "done");
  EXPECT_DOUBLE_EQ(s.nodes(0).samples_per_sec(), 0);  // ended ranks no longer count
  EXPECT_EQ(s.nodes(1).state(), "failed");
  tracker_.OnSessionEnded(0);
  EXPECT_EQ(tracker_.Snapshot(4).nodes(0).state(), "done");
}

TEST_F(LiveTrackerTest, SessionEndedWithoutRanksIsEnded) {
  tracker_.OnSessionOpened(0, 1);
  tracker_.OnAgentMessage(0, Heartbeat(0, {}), 2);
  EXPECT_EQ(tracker_.Snapshot(2).nodes(0).state(), "idle");
  tracker_.OnSessionEnded(0);
  EXPECT_EQ(tracker_.Snapshot(2).nodes(0).state(), "ended");
}

TEST_F(LiveTrackerTest, EtaFromTheStepRateOnceTheTotalIsKnown) {
  tracker_.OnSessionOpened(0, 0);
  tracker_.OnAgentMessage(0, Heartbeat(2, {{0, 10}}), 10);
  EXPECT_EQ(tracker_.Snapshot(10).eta_s(), -1);  // no total yet
  tracker_.OnAgentMessage(0, Heartbeat(2, {{0, 20}}, 110), 12);
  tracker_.OnAgentMessage(0, Heartbeat(2, {{0, 30}}, 110), 14);
  v1::JobSnapshot s = tracker_.Snapshot(14);
  EXPECT_EQ(s.total_steps(), 110);
  // 20 steps in 4 s: the 80 left take 16 s.
  EXPECT_DOUBLE_EQ(s.eta_s(), 16);
}

TEST_F(LiveTrackerTest, SparesAndTheEnd) {
  v1::JoinResponse spare;
  spare.set_node_id(2);
  spare.set_spare(true);
  tracker_.OnJoined("c", spare);
  tracker_.OnSessionOpened(2, 1);
  v1::JobSnapshot s = tracker_.Snapshot(1);
  EXPECT_EQ(s.world_size(), 4);  // a spare's empty place does not reset it
  EXPECT_EQ(s.nodes(2).state(), "spare");
  tracker_.OnEnded(1);
  s = tracker_.Snapshot(2);
  EXPECT_TRUE(s.ended());
  EXPECT_EQ(s.exit_code(), 1);
}

}  // namespace
}  // namespace dlaunch
