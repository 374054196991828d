// JobState and the straggler score: a slow node named in the journal, the terminal and the live
// view, then cleared; a GPU held down named by its clock in a job without reports; a shared
// slowdown names nobody; under stragglers.policy: exclude the node
// is left out at the next restart and a spare takes its place. Synthetic times.
#include <gtest/gtest.h>

#include "launcher/job/job_state.h"
#include "tests/launcher/job/job_state_fixture.h"

namespace dlaunch {
namespace {

using job_state_testing::Round;

// A heartbeat of node `node` whose one rank reached `step`, its last 10 steps taking `wall_s`.
v1::AgentMessage StepReport(int rank, int64_t step, double wall_s) {
  v1::AgentMessage m;
  m.mutable_heartbeat()->set_workers_running(1);
  v1::WorkerReport* r = m.mutable_heartbeat()->add_reports();
  r->set_kind(v1::WorkerReport::STEP);
  r->set_rank(rank);
  r->set_step(step);
  r->set_interval_s(wall_s);
  return m;
}

// A heartbeat of a node whose one rank sends no reports and runs on its GPU "0", busy at `mhz`
// of at most 1980 MHz, held down by `reasons`.
v1::AgentMessage GpuHeartbeat(int rank, double mhz, uint64_t reasons) {
  v1::AgentMessage m;
  v1::Heartbeat* hb = m.mutable_heartbeat();
  hb->set_workers_running(1);
  v1::GpuSample* g = hb->add_gpus();
  g->set_device("0");
  g->set_utilization_pct(97);
  g->set_sm_clock_mhz(mhz);
  g->set_sm_clock_max_mhz(1980);
  g->set_clock_event_reasons(reasons);
  (*hb->mutable_rank_gpus())[rank].add_devices("0");
  return m;
}

class JobStateStragglersTest : public ::testing::Test {
 protected:
  void Begin(JobConfig config, int spares = 0) {
    state_ = std::make_unique<JobState>(std::move(config));
    spares_ = spares;
    state_->OnStarted(std::vector<std::string>(3, "dlaunch-agent"), 0);
    state_->OnRendezvousClosed(Round(3, 1), 1);
    for (int i = 0; i < 3; ++i) state_->OnSessionOpened(i, 100 + i, 1);
    for (int i = 0; i < spares; ++i) {
      Participant p;
      p.agent_id = "s" + std::to_string(i);
      p.host = "spare" + std::to_string(i);
      p.slots = 1;
      state_->OnSpareJoined(p, 3 + i, 1);
      state_->OnSessionOpened(3 + i, 200 + i, 1);
    }
    for (int r = 0; r < 3; ++r) state_->OnAgentMessage(r, job_state_testing::Worker(r, v1::WorkerEvent::STARTED), 1);
  }
  // One second: every node reports 10 more steps, node `slow`'s at `factor` x the pace.
  JobActions Second(int slow, double factor) {
    JobActions out;
    ++t_;
    step_ += 10;
    for (int n = 0; n < 3; ++n) {
      Append(out, state_->OnAgentMessage(n, StepReport(n, step_, n == slow ? factor : 1), t_));
    }
    // A spare's heartbeats keep it in the job.
    for (int n = 3; n < 3 + spares_; ++n) Append(out, state_->OnAgentMessage(n, job_state_testing::Heartbeat(0), t_));
    Append(out, state_->OnTick(t_));
    return out;
  }
  std::unique_ptr<JobState> state_;
  double t_ = 1;
  int64_t step_ = 0;
  int spares_ = 0;
};

TEST_F(JobStateStragglersTest, ASlowNodeIsNamedShownAndClearedWithItsFigures) {
  Begin(TestJobConfig(3));
  JobActions out;
  for (int i = 0; i < 20; ++i) Append(out, Second(2, 2));
  const std::string events = Events(out);
  ASSERT_NE(events.find("\"straggler_detected\""), std::string::npos) << events;
  EXPECT_NE(events.find("\"node_id\":2"), std::string::npos);
  EXPECT_NE(events.find("\"ratio\":2"), std::string::npos);
  EXPECT_NE(events.find("\"measure\":\"wall time per step\""), std::string::npos);
  EXPECT_NE(Printed(out).find("straggler: node 2 (n2), rank 2 takes 0.200 s per step"),
            std::string::npos)
      << Printed(out);
  v1::JobSnapshot snap = state_->Snapshot(t_);
  EXPECT_TRUE(snap.nodes(2).straggler());
  EXPECT_DOUBLE_EQ(snap.nodes(2).straggler_score(), 2);
  EXPECT_FALSE(snap.nodes(0).straggler());
  EXPECT_DOUBLE_EQ(snap.nodes(0).straggler_score(), 1);

  out.clear();
  for (int i = 0; i < 20; ++i) Append(out, Second(-1, 1));
  ASSERT_NE(Events(out).find("\"straggler_cleared\""), std::string::npos);
  EXPECT_NE(Events(out).find("\"reason\":\"back to the median's pace\""), std::string::npos);
  EXPECT_NE(Printed(out).find("straggler cleared: node 2 (n2)"), std::string::npos);
  EXPECT_FALSE(state_->Snapshot(t_).nodes(2).straggler());
}

TEST_F(JobStateStragglersTest, WithoutReportsAGpuHeldDownIsNamedByItsClockAndWhy) {
  Begin(TestJobConfig(3));
  JobActions out;
  for (int i = 0; i < 20; ++i) {
    ++t_;
    for (int n = 0; n < 3; ++n) {
      const bool hot = n == 2;  // held down by its power cap
      Append(out, state_->OnAgentMessage(n, GpuHeartbeat(n, hot ? 1386 : 1980, hot ? 0x4 : 0), t_));
    }
    Append(out, state_->OnTick(t_));
  }
  const std::string events = Events(out);
  ASSERT_NE(events.find("\"straggler_detected\""), std::string::npos) << events;
  EXPECT_NE(events.find("\"node_id\":2"), std::string::npos);
  EXPECT_NE(events.find("\"measure\":\"gpu clock\""), std::string::npos);
  EXPECT_NE(events.find("\"gpu_clock_max_mhz\":1980"), std::string::npos);
  EXPECT_NE(events.find("\"gpu_clock_reasons\":[\"power cap\"]"), std::string::npos) << events;
  EXPECT_NE(Printed(out).find("straggler: node 2 (n2), rank 2: its GPU's SM clock ran at 1386 MHz "
                              "(of 1980) while busy, the median 1980 MHz is 1.43x it (gpu clock), "
                              "for 3 intervals; its GPU's clocks held down by: power cap"),
            std::string::npos)
      << Printed(out);
  EXPECT_TRUE(state_->Snapshot(t_).nodes(2).straggler());
  EXPECT_NEAR(state_->Snapshot(t_).nodes(2).straggler_score(), 1980.0 / 1386, 1e-9);

  out.clear();
  for (int i = 0; i < 20; ++i) {
    ++t_;
    for (int n = 0; n < 3; ++n) {
      Append(out, state_->OnAgentMessage(n, GpuHeartbeat(n, 1980, 0), t_));
    }
    Append(out, state_->OnTick(t_));
  }
  EXPECT_NE(Printed(out).find("straggler cleared: node 2 (n2), rank 2: back to the median's pace "
                              "(its GPU's SM clock 1980 MHz, median 1980 MHz; gpu clock)"),
            std::string::npos)
      << Printed(out);
}

TEST_F(JobStateStragglersTest, EveryNodeSlowerAtOnceNamesNobody) {
  Begin(TestJobConfig(3));
  JobActions out;
  for (int i = 0; i < 30; ++i) Append(out, Second(-1, 1));
  for (int i = 0; i < 30; ++i) {
    ++t_;
    step_ += 10;
    for (int n = 0; n < 3; ++n) Append(out, state_->OnAgentMessage(n, StepReport(n, step_, 3), t_));
    Append(out, state_->OnTick(t_));
  }
  EXPECT_EQ(Events(out).find("straggler"), std::string::npos);
}

TEST_F(JobStateStragglersTest, PolicyOffScoresNothing) {
  JobConfig c = TestJobConfig(3);
  c.stragglers.enabled = false;
  Begin(c);
  JobActions out;
  for (int i = 0; i < 30; ++i) Append(out, Second(2, 3));
  EXPECT_EQ(Events(out).find("straggler"), std::string::npos);
  EXPECT_DOUBLE_EQ(state_->Snapshot(t_).nodes(2).straggler_score(), 0);
}

TEST_F(JobStateStragglersTest, UnderExcludeTheNodeIsLeftOutAtTheNextRestart) {
  JobConfig c = TestJobConfig(3);
  c.exclude_stragglers = true;
  c.restarts.max_restarts = 2;
  Begin(c, /*spares=*/1);
  JobActions out;
  for (int i = 0; i < 20; ++i) Append(out, Second(2, 2));
  ASSERT_NE(Events(out).find("\"straggler_detected\""), std::string::npos);
  EXPECT_NE(Events(out).find("\"policy\":\"exclude\""), std::string::npos);
  // The round goes on: a straggler is not a failure.
  EXPECT_FALSE(Has<SendStop>(out));
  // Node 0's rank fails: the round stops, node 2 is excluded and the spare promoted.
  out.clear();
  Append(out, state_->OnAgentMessage(0, job_state_testing::Worker(0, v1::WorkerEvent::FAILED, 1), ++t_));
  v1::AgentMessage ended;
  ended.mutable_round_ended()->set_round(0);
  for (int n = 0; n < 3; ++n) Append(out, state_->OnAgentMessage(n, ended, t_ + 0.5));
  Append(out, state_->OnTick(t_ + 1));
  const std::string events = Events(out);
  EXPECT_NE(events.find("\"straggler_cleared\""), std::string::npos) << events;
  EXPECT_NE(events.find("\"reason\":\"the round ended\""), std::string::npos);
  ASSERT_NE(events.find("\"node_excluded\""), std::string::npos) << events;
  EXPECT_NE(events.find("it was named a straggler"), std::string::npos);
  EXPECT_NE(events.find("\"spare_promoted\":{\"node_id\":3"), std::string::npos) << events;
}

}  // namespace
}  // namespace dlaunch
