#include "launcher/trace/trace_summary.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "launcher/jobdir/journal.h"

namespace dlaunch {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string StepLine(int step, int data_us, int backward_us, int stride = 1) {
  return absl::StrCat("{\"step\":", step, ",\"ts\":", 1000 * step, ",\"data\":", data_us,
                      ",\"forward\":1000,\"backward\":", backward_us,
                      ",\"optimizer\":1000,\"stride\":", stride, "}\n");
}

TEST(TraceSummaryTest, PhasesComeFromTheStepTraceWeightedByStride) {
  TraceInput in;
  in.rank_steps[0] =
      ParseStepTrace("{\"trace\":\"dlaunch-step-trace\"}\n" + StepLine(1, 1000, 7000) +
                     StepLine(2, 1000, 7000, 3) +
                     "{\"span\":\"checkpoint\",\"step\":2,\"ts\":5,\"dur\":250000}\n");
  in.metrics = ParseMetricJournal(
      "{\"time\":\"2026-11-23T10:00:01.000Z\",\"rank\":0,\"node\":0,\"step\":4,\"samples\":128,"
      "\"interval_s\":0.5,\"data_ms\":99}\n").metrics;
  std::vector<RankTime> ranks = SummarizeRankTime(in);
  ASSERT_EQ(ranks.size(), 1u);
  EXPECT_TRUE(ranks[0].from_step_trace);
  EXPECT_EQ(ranks[0].steps, 4);
  EXPECT_DOUBLE_EQ(ranks[0].step_ms, 40);
  EXPECT_DOUBLE_EQ(ranks[0].data_ms, 4);
  EXPECT_DOUBLE_EQ(ranks[0].backward_ms, 28);
  EXPECT_DOUBLE_EQ(ranks[0].other_ms, 250);
  EXPECT_DOUBLE_EQ(ranks[0].samples, 128);
  EXPECT_EQ(ranks[0].node, 0);
}

TEST(TraceSummaryTest, WithoutAStepTraceTheReportsTimingsAreUsed) {
  TraceInput in;
  in.metrics = ParseMetricJournal(
      "{\"time\":\"2026-11-23T10:00:01.000Z\",\"rank\":1,\"node\":0,\"step\":10,\"samples\":320,"
      "\"interval_s\":1,\"data_ms\":100,"
      "\"forward_ms\":200,\"backward_ms\":500,\"comm_wait_ms\":100,\"optimizer_ms\":100}\n"
      "{\"time\":\"2026-11-23T10:00:02.000Z\",\"rank\":1,\"node\":0,\"step\":20,\"samples\":320,"
      "\"interval_s\":1,\"data_ms\":100,"
      "\"forward_ms\":200,\"backward_ms\":500,\"comm_wait_ms\":100,\"optimizer_ms\":100}\n").metrics;
  std::vector<RankTime> ranks = SummarizeRankTime(in);
  ASSERT_EQ(ranks.size(), 1u);
  EXPECT_FALSE(ranks[0].from_step_trace);
  EXPECT_EQ(ranks[0].steps, 20);
  EXPECT_DOUBLE_EQ(ranks[0].step_ms, 2000);
  EXPECT_DOUBLE_EQ(ranks[0].backward_ms, 1200);
  const std::string text = FormatTraceSummary("runs/j/trace.json", ranks, {});
  EXPECT_THAT(text, HasSubstr("(reports)"));
  EXPECT_THAT(text, HasSubstr("  60.0%"));  // backward + communication wait of step time
  EXPECT_THAT(text, HasSubstr("320.0"));    // samples/s
}

RankTime Rank(int rank, double step_ms) {
  RankTime r;
  r.rank = rank;
  r.node = rank / 2;
  r.from_step_trace = true;
  r.steps = 10;
  r.step_ms = 10 * step_ms;
  r.data_ms = r.step_ms * 0.1;
  r.forward_ms = r.step_ms * 0.3;
  r.backward_ms = r.step_ms * 0.5;
  r.optimizer_ms = r.step_ms * 0.1;
  return r;
}

TEST(TraceSummaryTest, NamesTheTraceAndTheSlowestRank) {
  const std::string text =
      FormatTraceSummary("runs/j/trace.json", {Rank(0, 10), Rank(1, 12.5), Rank(2, 10)},
                         {"thinned to stay below 4194304 bytes"});
  EXPECT_THAT(text, HasSubstr("trace: runs/j/trace.json\n"));
  EXPECT_THAT(text, HasSubstr("ui.perfetto.dev"));
  EXPECT_THAT(text, HasSubstr("note: thinned to stay below"));
  EXPECT_THAT(text, HasSubstr("slowest rank: 1 (12.50 ms per step, 25% above the fastest"));
  // Slowest first.
  std::vector<std::string> lines = absl::StrSplit(text, '\n');
  auto row = std::find_if(lines.begin(), lines.end(),
                          [](const std::string& l) { return absl::StrContains(l, "12.50  "); });
  ASSERT_NE(row, lines.end());
  EXPECT_THAT(*row, HasSubstr("   10.0%    30.0%      50.0%    10.0%"));
  EXPECT_THAT(*(row - 1), HasSubstr("rank  node"));
}

TEST(TraceSummaryTest, AWideJobFitsOnOneScreen) {
  std::vector<RankTime> ranks;
  for (int r = 0; r < 512; ++r) ranks.push_back(Rank(r, 10 + r % 7 + (r == 300 ? 50 : 0)));
  const std::string text = FormatTraceSummary("t.json", ranks, {}, 16);
  EXPECT_LE(std::count(text.begin(), text.end(), '\n'), 24);
  EXPECT_THAT(text, HasSubstr("496 rank(s) not shown"));
  EXPECT_THAT(text, HasSubstr("slowest rank: 300"));
}

TEST(TraceSummaryTest, NoReportsSaysSo) {
  EXPECT_THAT(FormatTraceSummary("t.json", {}, {}), HasSubstr("no worker reported steps"));
  EXPECT_THAT(FormatTraceSummary("t.json", {}, {}), Not(HasSubstr("slowest")));
}

}  // namespace
}  // namespace dlaunch
