// MergeReports: how workers' reports are folded per rank.
#include "proto/report_merge.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace dlaunch {
namespace {

v1::WorkerReport Report(int64_t step, int64_t samples, double interval_s) {
  v1::WorkerReport r;
  r.set_rank(1);
  r.set_step(step);
  r.set_samples(samples);
  r.set_interval_s(interval_s);
  r.set_samples_per_sec(samples / interval_s);
  return r;
}

TEST(MergeReportsTest, SamplesIntervalAndPhaseTimesAddUpAndTheRateIsRecomputed) {
  v1::WorkerReport a = Report(10, 100, 1.0);
  a.mutable_timings()->set_forward_ms(10);
  a.mutable_timings()->set_comm_wait_ms(1);
  a.set_loss(2.0);
  v1::WorkerReport b = Report(20, 300, 1.0);
  b.mutable_timings()->set_forward_ms(30);
  b.mutable_timings()->set_optimizer_ms(5);
  b.set_loss(1.5);

  v1::WorkerReport m = MergeReports(a, b);
  EXPECT_EQ(m.samples(), 400);
  EXPECT_DOUBLE_EQ(m.interval_s(), 2.0);
  EXPECT_DOUBLE_EQ(m.samples_per_sec(), 200.0);
  EXPECT_DOUBLE_EQ(m.timings().forward_ms(), 40);
  EXPECT_DOUBLE_EQ(m.timings().comm_wait_ms(), 1);
  EXPECT_DOUBLE_EQ(m.timings().optimizer_ms(), 5);
  // Everything else is the latest value.
  EXPECT_EQ(m.step(), 20);
  EXPECT_DOUBLE_EQ(m.loss(), 1.5);
}

TEST(MergeReportsTest, ATestAccuracyIsKeptUntilANewerOneArrives) {
  v1::WorkerReport a = Report(10, 100, 1.0);
  a.set_test_accuracy(0.8);
  v1::WorkerReport b = Report(20, 100, 1.0);
  v1::WorkerReport m = MergeReports(a, b);
  ASSERT_TRUE(m.has_test_accuracy());
  EXPECT_DOUBLE_EQ(m.test_accuracy(), 0.8);
  b.set_test_accuracy(0.9);
  EXPECT_DOUBLE_EQ(MergeReports(a, b).test_accuracy(), 0.9);
}

TEST(MergeReportsTest, AZeroIntervalKeepsTheLatestRate) {
  v1::WorkerReport a = Report(10, 0, 1.0);
  a.set_interval_s(0);
  v1::WorkerReport b = a;
  b.set_samples_per_sec(42);
  EXPECT_DOUBLE_EQ(MergeReports(a, b).samples_per_sec(), 42);
}

TEST(MergeReportsTest, APhaseReportMovesThePhaseOnAndKeepsTheIntervalsMetrics) {
  v1::WorkerReport a = Report(16, 256, 2.0);
  a.set_kind(v1::WorkerReport::STEP);
  a.set_phase(v1::WorkerReport::TRAINING);
  a.set_loss(0.5);
  a.set_accuracy(0.75);
  a.set_total_steps(32);
  a.set_checkpoint_step(8);
  v1::WorkerReport p;
  p.set_kind(v1::WorkerReport::PHASE);
  p.set_phase(v1::WorkerReport::EVALUATING);
  p.set_rank(1);
  p.set_step(16);
  p.set_total_steps(32);
  p.set_checkpoint_step(8);

  v1::WorkerReport m = MergeReports(a, p);
  EXPECT_EQ(m.phase(), v1::WorkerReport::EVALUATING);
  EXPECT_EQ(m.kind(), v1::WorkerReport::STEP);
  EXPECT_EQ(m.step(), 16);
  EXPECT_EQ(m.samples(), 256);
  EXPECT_DOUBLE_EQ(m.interval_s(), 2.0);
  EXPECT_DOUBLE_EQ(m.samples_per_sec(), 128.0);
  EXPECT_DOUBLE_EQ(m.loss(), 0.5);
  ASSERT_TRUE(m.has_accuracy());
  EXPECT_EQ(m.total_steps(), 32);
  EXPECT_EQ(m.checkpoint_step(), 8);

  // A report after the phase change is taken as usual and carries its own phase.
  v1::WorkerReport e = Report(16, 0, 0.1);
  e.set_kind(v1::WorkerReport::EPOCH);
  e.set_phase(v1::WorkerReport::TRAINING);
  e.set_test_accuracy(0.8);
  v1::WorkerReport m2 = MergeReports(m, e);
  EXPECT_EQ(m2.kind(), v1::WorkerReport::EPOCH);
  EXPECT_EQ(m2.phase(), v1::WorkerReport::TRAINING);
  EXPECT_EQ(m2.samples(), 256);

  // Phase reports alone stay phase reports.
  v1::WorkerReport q = p;
  q.set_phase(v1::WorkerReport::CHECKPOINTING);
  EXPECT_EQ(MergeReports(p, q).kind(), v1::WorkerReport::PHASE);
  EXPECT_EQ(MergeReports(p, q).phase(), v1::WorkerReport::CHECKPOINTING);
  EXPECT_EQ(MergeReports(p, q).samples(), 0);
}

TEST(MergeReportsTest, AStepReportAfterACheckpointKeepsItsStepAndTheTotal) {
  // As the Python package sends them: the total once, a checkpoint once, then plain steps.
  v1::WorkerReport total;
  total.set_kind(v1::WorkerReport::PHASE);
  total.set_total_steps(20);
  v1::WorkerReport saved;
  saved.set_kind(v1::WorkerReport::PHASE);
  saved.set_step(10);
  saved.set_checkpoint_step(10);
  v1::WorkerReport step = Report(11, 32, 0.05);
  v1::WorkerReport m = MergeReports(MergeReports(MergeReports(Report(9, 32, 0.05), total), saved), step);
  EXPECT_EQ(m.step(), 11);
  EXPECT_EQ(m.checkpoint_step(), 10);
  EXPECT_EQ(m.total_steps(), 20);
  EXPECT_EQ(m.samples(), 64);
}

v1::WorkerReport PhaseEnd(const std::string& name, double unix_s, double seconds) {
  v1::WorkerReport r;
  r.set_kind(v1::WorkerReport::PHASE);
  r.set_rank(1);
  v1::PhaseEvent* e = r.mutable_phase_log()->add_events();
  e->set_name(name);
  e->set_end(true);
  e->set_unix_s(unix_s);
  e->set_seconds(seconds);
  return r;
}

TEST(MergeReportsTest, PhasesShorterThanAHeartbeatKeepTheirLengthsInOrder) {
  // Between two heartbeats: a step, a checkpoint of 0.2 s, a step, an evaluation of 0.1 s.
  v1::WorkerReport m = Report(10, 32, 0.5);
  m = MergeReports(m, PhaseEnd("checkpoint", 1000.2, 0.2));
  m = MergeReports(m, Report(11, 32, 0.5));
  m = MergeReports(m, PhaseEnd("eval", 1000.9, 0.1));
  EXPECT_EQ(m.step(), 11);
  EXPECT_EQ(m.samples(), 64);
  ASSERT_EQ(m.phase_log().events_size(), 2);
  EXPECT_EQ(m.phase_log().events(0).name(), "checkpoint");
  EXPECT_DOUBLE_EQ(m.phase_log().events(0).seconds(), 0.2);
  EXPECT_EQ(m.phase_log().events(1).name(), "eval");
  EXPECT_DOUBLE_EQ(m.phase_log().events(1).unix_s(), 1000.9);
  EXPECT_EQ(m.phase_log().dropped(), 0);
  // Reports without phases make none up.
  EXPECT_FALSE(MergeReports(Report(1, 1, 1), Report(2, 1, 1)).has_phase_log());
}

TEST(MergeReportsTest, PhaseEventsPastTheBoundAreCounted) {
  v1::WorkerReport m = Report(1, 1, 1);
  for (int i = 0; i < kMaxPhaseEvents + 5; ++i) m = MergeReports(m, PhaseEnd("data", 1000 + i, 0.01));
  EXPECT_EQ(m.phase_log().events_size(), kMaxPhaseEvents);
  EXPECT_EQ(m.phase_log().dropped(), 5);
  EXPECT_DOUBLE_EQ(m.phase_log().events(0).unix_s(), 1000);  // the first ones are kept
  m = MergeReports(m, Report(2, 1, 1));
  EXPECT_EQ(m.phase_log().dropped(), 5);
}

TEST(MergeReportsTest, APhaseOfTheScriptsOwnNameLeavesTheRanksPhase) {
  v1::WorkerReport a = Report(16, 256, 2.0);
  a.set_phase(v1::WorkerReport::EVALUATING);
  v1::WorkerReport own = PhaseEnd("warmup", 1000, 1);  // no enum for it
  EXPECT_EQ(MergeReports(a, own).phase(), v1::WorkerReport::EVALUATING);
}

}  // namespace
}  // namespace dlaunch
