#include "launcher/trace/journal_rows.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

namespace dlaunch {
namespace {

TEST(ScanJsonObjectTest, ReadsStringsAndNumbersAndSkipsTheRest) {
  std::map<std::string, std::string> seen;
  const bool ok = ScanJsonObject(
      "{\"a\":\"x\\\"y\",\"n\":-1.5e2, "
      "\"o\":{\"k\":[1,{\"z\":\"}\"}]},\"t\":true,\"l\":[],\"e\":7}",
      [&](absl::string_view key, const JsonScalar& v) {
        seen[std::string(key)] = v.kind == JsonScalar::kString   ? "s:" + v.text
                                 : v.kind == JsonScalar::kNumber ? "n:" + std::to_string(v.number)
                                                                 : "other";
      });
  ASSERT_TRUE(ok);
  EXPECT_EQ(seen["a"], "s:x\"y");
  EXPECT_EQ(seen["n"], "n:-150.000000");
  EXPECT_EQ(seen["o"], "other");
  EXPECT_EQ(seen["t"], "other");
  EXPECT_EQ(seen["l"], "other");
  EXPECT_EQ(seen["e"], "n:7.000000");
}

TEST(ScanJsonObjectTest, RefusesWhatIsNotOneWholeObject) {
  auto ignore = [](absl::string_view, const JsonScalar&) {};
  EXPECT_FALSE(ScanJsonObject("{\"time\":\"2026-11-23T10:00:0", ignore));
  EXPECT_FALSE(ScanJsonObject("[1,2]", ignore));
  EXPECT_FALSE(ScanJsonObject("{\"a\":1} trailing", ignore));
  EXPECT_FALSE(ScanJsonObject("{\"a\" 1}", ignore));
  EXPECT_TRUE(ScanJsonObject("  {}  ", ignore));
}

TEST(JournalRowsTest, MetricsLinesBecomeRows) {
  int bad = -1;
  std::vector<MetricRow> rows = ParseMetricRows(
      "{\"time\":\"2026-11-23T10:00:01.250Z\",\"node\":1,\"rank\":3,\"step\":40,\"epoch\":0,"
      "\"samples\":640,\"interval_s\":1.5,\"samples_per_sec\":426.6,\"loss\":0.25,\"data_ms\":1,"
      "\"forward_ms\":2,\"backward_ms\":3,\"comm_wait_ms\":4,\"optimizer_ms\":5}\n"
      "{\"node\":1,\"rank\":3}\n"  // no time
      "{\"time\":\"2026-11-23T10:00:02",
      &bad);
  EXPECT_EQ(bad, 2);
  ASSERT_EQ(rows.size(), 1u);
  const MetricRow& m = rows[0];
  EXPECT_EQ(m.time_us, 1795428001250000);
  EXPECT_EQ(m.node, 1);
  EXPECT_EQ(m.rank, 3);
  EXPECT_EQ(m.step, 40);
  EXPECT_EQ(m.samples, 640);
  EXPECT_EQ(m.interval_s, 1.5);
  EXPECT_EQ(m.loss, 0.25);
  EXPECT_EQ(m.comm_wait_ms, 4);
  EXPECT_EQ(m.optimizer_ms, 5);
}

TEST(JournalRowsTest, StepTraceLinesBecomeRowsAndTheHeaderItsRule) {
  RankStepTrace t = ParseStepTrace(
      "{\"trace\":\"dlaunch-step-trace\",\"version\":1,\"rank\":0,\"sampling\":\"every step\"}\n"
      "{\"step\":7,\"ts\":1795428001000000,\"data\":50,\"forward\":250,\"backward\":600,"
      "\"optimizer\":100,\"stride\":2}\n"
      "{\"span\":\"checkpoint\",\"step\":8,\"ts\":1795428002000000,\"dur\":4000,\"stride\":1}\n"
      "{\"step\":9,\"ts\":17954");
  EXPECT_EQ(t.sampling, "every step");
  EXPECT_EQ(t.bad_lines, 1);
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[0].step, 7);
  EXPECT_EQ(t.rows[0].ts_us, 1795428001000000);
  EXPECT_EQ(t.rows[0].backward_us, 600);
  EXPECT_EQ(t.rows[0].stride, 2);
  EXPECT_TRUE(t.rows[0].span.empty());
  EXPECT_EQ(t.rows[1].span, "checkpoint");
  EXPECT_EQ(t.rows[1].dur_us, 4000);
}

}  // namespace
}  // namespace dlaunch
