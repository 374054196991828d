// Which reports become lines of metrics.jsonl, and when (launcher/job/metrics_cadence.h).
#include "launcher/job/metrics_cadence.h"

#include <optional>
#include <vector>

#include "gtest/gtest.h"

namespace dlaunch {
namespace {

v1::WorkerReport Step(int64_t step, int64_t samples, double interval_s) {
  v1::WorkerReport r;
  r.set_kind(v1::WorkerReport::STEP);
  r.set_step(step);
  r.set_samples(samples);
  r.set_interval_s(interval_s);
  r.set_loss(1.0 / static_cast<double>(step + 1));
  return r;
}

TEST(MetricsCadenceTest, TheIntervalKeepsTheJournalNearItsLineRate) {
  EXPECT_EQ(MetricsCadence::IntervalFor(4, 1.0), 0);
  EXPECT_EQ(MetricsCadence::IntervalFor(4000, 1.0), 0);      // 4,000 lines a second: as they come
  EXPECT_EQ(MetricsCadence::IntervalFor(8000, 2.0), 0);      // a 2 s heartbeat halves the rate
  EXPECT_DOUBLE_EQ(MetricsCadence::IntervalFor(40000, 1.0), 10.0);
  EXPECT_DOUBLE_EQ(MetricsCadence::IntervalFor(16000, 0.5), 2.0);
}

TEST(MetricsCadenceTest, AChangeOfIntervalIsWorthSayingWhenFoldingStartsStopsOrMovesATenth) {
  MetricsCadence c;
  EXPECT_FALSE(c.SetInterval(0));       // nothing folded, as before
  EXPECT_TRUE(c.SetInterval(10));       // folding starts
  EXPECT_FALSE(c.SetInterval(9.999));   // a restart without one node of 40,000 ranks
  EXPECT_FALSE(c.SetInterval(9.2));     // within a tenth of 9.999
  EXPECT_TRUE(c.SetInterval(5));        // half the ranks
  EXPECT_DOUBLE_EQ(c.interval(), 5);
  EXPECT_TRUE(c.SetInterval(0));        // every report a line again
}

TEST(MetricsCadenceTest, WithoutAnIntervalEveryReportIsALineAtOnce) {
  MetricsCadence c;
  for (int i = 0; i < 5; ++i) {
    std::optional<MetricsCadence::Line> line = c.Add(3, 1, 0, Step(i, 32, 1.0), i);
    ASSERT_TRUE(line.has_value());
    EXPECT_EQ(line->report.step(), i);
    EXPECT_EQ(line->node, 1);
  }
  EXPECT_EQ(c.lines(), 5);
  EXPECT_EQ(c.folded(), 0);
  EXPECT_TRUE(c.FlushAll().empty());
}

TEST(MetricsCadenceTest, ARanksReportsAreFoldedIntoOneLinePerIntervalAndNothingIsLost) {
  MetricsCadence c;
  c.SetInterval(10);
  int64_t samples_written = 0;
  double seconds_written = 0;
  int lines = 0;
  int64_t last_step = -1;
  for (int t = 0; t < 35; ++t) {  // one report a second for 35 s
    if (auto line = c.Add(7, 2, 0, Step(t, 64, 1.0), t)) {
      ++lines;
      samples_written += line->report.samples();
      seconds_written += line->report.interval_s();
      last_step = line->report.step();
    }
  }
  // The first report at once, then one line each 10 s: t = 0, 10, 20, 30.
  EXPECT_EQ(lines, 4);
  EXPECT_EQ(last_step, 30);
  std::vector<MetricsCadence::Line> rest = c.FlushAll();  // t = 31..34, held
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].report.step(), 34);
  EXPECT_EQ(rest[0].rank, 7);
  samples_written += rest[0].report.samples();
  seconds_written += rest[0].report.interval_s();
  EXPECT_EQ(samples_written, 35 * 64);  // every sample is in some line
  EXPECT_DOUBLE_EQ(seconds_written, 35.0);
  EXPECT_EQ(c.lines(), 5);
  EXPECT_EQ(c.lines() + c.folded(), 35);
  EXPECT_TRUE(c.FlushAll().empty());  // flushed once
}

TEST(MetricsCadenceTest, ARanksEndWritesWhatItHeld) {
  MetricsCadence c;
  c.SetInterval(10);
  ASSERT_TRUE(c.Add(1, 0, 0, Step(0, 8, 1.0), 0).has_value());
  EXPECT_FALSE(c.Add(1, 0, 0, Step(1, 8, 1.0), 1).has_value());
  std::optional<MetricsCadence::Line> end = c.Flush(1);
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(end->report.step(), 1);
  EXPECT_FALSE(c.Flush(1).has_value());
  EXPECT_FALSE(c.Flush(99).has_value());  // a rank never seen
}

TEST(MetricsCadenceTest, AReportOfTheNextRoundWritesTheHeldOneFirst) {
  MetricsCadence c;
  c.SetInterval(10);
  ASSERT_TRUE(c.Add(1, 0, 0, Step(0, 8, 1.0), 0).has_value());
  EXPECT_FALSE(c.Add(1, 0, 0, Step(1, 8, 1.0), 1).has_value());
  std::optional<MetricsCadence::Line> earlier = c.Add(1, 3, 1, Step(0, 8, 1.0), 2);
  ASSERT_TRUE(earlier.has_value());
  EXPECT_EQ(earlier->round, 0);
  EXPECT_EQ(earlier->report.step(), 1);
  std::vector<MetricsCadence::Line> rest = c.FlushAll();
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].round, 1);
  EXPECT_EQ(rest[0].node, 3);
}

}  // namespace
}  // namespace dlaunch
