// MergeReports and ParseReportLine: how workers' report lines are read and folded per rank.
#include "agent/report_merge.h"

#include "agent/report_server.h"
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

TEST(ParseReportLineTest, ReadsSnakeAndCamelCaseAndIgnoresUnknownFields) {
  v1::WorkerReport r;
  ASSERT_TRUE(ParseReportLine(
                  R"({"step": 5, "samples": 64, "interval_s": 0.5, "testAccuracy": 0.7,)"
                  R"( "timings": {"forward_ms": 3}, "my_field": 1})",
                  &r)
                  .ok());
  EXPECT_EQ(r.step(), 5);
  EXPECT_EQ(r.samples(), 64);
  EXPECT_DOUBLE_EQ(r.interval_s(), 0.5);
  EXPECT_DOUBLE_EQ(r.test_accuracy(), 0.7);
  EXPECT_DOUBLE_EQ(r.timings().forward_ms(), 3);
}

TEST(ParseReportLineTest, AMalformedLineIsInvalidArgument) {
  v1::WorkerReport r;
  EXPECT_EQ(ParseReportLine("{not json", &r).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseReportLine(R"({"step": "many"})", &r).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace dlaunch
