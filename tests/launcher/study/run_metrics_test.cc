#include "launcher/study/run_metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "launcher/jobdir/journal.h"

namespace dlaunch {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

constexpr char kSummary[] =
    R"({"job_id":"j","result":"succeeded","exit_code":0,"wall_time_s":12.5,"nodes":1,)"
    R"("world_size":2,"samples":6400,"samples_per_sec":800.5,"samples_per_sec_per_rank":400.25,)"
    R"("final_loss":0.31,"test_accuracy":0.87})";

TEST(ParseRunMetricsTest, ReadsTheSummary) {
  auto m = ParseRunMetrics(kSummary, "");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->world_size, 2);
  EXPECT_DOUBLE_EQ(*m->samples_per_sec, 800.5);
  EXPECT_DOUBLE_EQ(*m->final_loss, 0.31);
  EXPECT_DOUBLE_EQ(*m->test_accuracy, 0.87);
  EXPECT_EQ(m->epochs, 0);
}

TEST(ParseRunMetricsTest, ReadsTheGoodputOfTheSummarysAccount) {
  auto m = ParseRunMetrics(
      R"({"result":"succeeded","goodput":{"wall_s":10,"goodput":0.75,)"
      R"("split":{"productive":{"seconds":7.5,"basis":"MEASURED"}}}})", "");
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_TRUE(m->goodput.has_value());
  EXPECT_DOUBLE_EQ(*m->goodput, 0.75);
  // A run whose ranks sent no step reports: its goodput is not known, not 0.
  auto none = ParseRunMetrics(
      R"({"goodput":{"goodput":0,"split":{"productive":{"basis":"NOT_KNOWN"}}}})", "");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->goodput.has_value());
  EXPECT_FALSE(ParseRunMetrics(kSummary, "")->goodput.has_value());
}

TEST(ParseRunMetricsTest, NoSamplesMeansNoThroughput) {
  auto m = ParseRunMetrics(
      R"({"result":"succeeded","world_size":2,"samples":0,"samples_per_sec":0})", "");
  ASSERT_TRUE(m.ok());
  EXPECT_FALSE(m->samples_per_sec.has_value());
  EXPECT_FALSE(m->final_loss.has_value());
  EXPECT_FALSE(m->test_accuracy.has_value());
}

TEST(ParseRunMetricsTest, NoSummaryIsNoFigures) {
  auto m = ParseRunMetrics("", "");
  ASSERT_TRUE(m.ok());
  EXPECT_FALSE(m->world_size.has_value());
  EXPECT_FALSE(m->samples_per_sec.has_value());
}

TEST(ParseRunMetricsTest, BrokenSummaryIsDataLoss) {
  auto m = ParseRunMetrics("{\"world_size\": 2", "");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kDataLoss);
}

TEST(ParseRunMetricsTest, AccuracyPerEpochAndRankZerosLossCurve) {
  // 10 steps per epoch. The epoch-1 report stands alone (epoch field 0); the epoch-2 one was
  // merged with steps 21-22 (epoch field 2); the last is the final report.
  const std::string metrics =
      R"({"rank":0,"step":5,"epoch":0,"loss":2.0})" "\n"
      R"({"rank":1,"step":5,"epoch":0,"loss":9.0})" "\n"
      R"({"rank":0,"step":10,"epoch":0,"loss":1.5,"test_accuracy":0.70})" "\n"
      R"({"rank":1,"step":10,"epoch":0,"loss":1.6,"test_accuracy":0.70})" "\n"
      "{\"rank\":0,\"st\n"  // a line cut short by a kill
      R"({"rank":0,"step":22,"epoch":2,"loss":1.2,"test_accuracy":0.80})" "\n"
      R"({"rank":0,"step":30,"epoch":2,"loss":1.0,"test_accuracy":0.85})" "\n";
  auto m = ParseRunMetrics("", metrics);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(m->accuracy_by_epoch, ElementsAre(Pair(1, 0.70), Pair(2, 0.80), Pair(3, 0.85)));
  EXPECT_THAT(m->loss_by_step,
              ElementsAre(Pair(5, 2.0), Pair(10, 1.5), Pair(22, 1.2), Pair(30, 1.0)));
  EXPECT_EQ(m->epochs, 3);
  EXPECT_DOUBLE_EQ(*m->test_accuracy, 0.85);  // the last epoch's, without a summary
}

TEST(ParseRunMetricsTest, ReadsTheTypedJournal) {
  std::string metrics;
  for (int step : {10, 20}) {
    v1::MetricLine m;
    m.set_time("2026-11-25T10:00:00.000Z");
    m.mutable_report()->set_rank(0);
    m.mutable_report()->set_step(step);
    m.mutable_report()->set_loss(1.0 / step);
    if (step == 20) m.mutable_report()->set_test_accuracy(0.9);
    metrics += MetricJournalLine(m).value() + "\n";
  }
  auto m = ParseRunMetrics("", metrics);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(m->loss_by_step, ElementsAre(Pair(10, 0.1), Pair(20, 0.05)));
  EXPECT_THAT(m->accuracy_by_epoch, ElementsAre(Pair(1, 0.9)));
}

}  // namespace
}  // namespace dlaunch
