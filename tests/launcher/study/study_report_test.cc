#include "launcher/study/study_report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "launcher/study/study_plots.h"

namespace dlaunch {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::vector<ScaleOutcome> TwoScales() {
  std::vector<ScaleOutcome> out(2);
  for (int i = 0; i < 2; ++i) {
    out[i].scale = Scale{1, i + 1};
    out[i].run_dir = out[i].scale.Label();
    out[i].wall_time_s = 10;
    out[i].metrics.world_size = i + 1;
    out[i].metrics.samples_per_sec = 100.0 * (i + 1) * 0.9;
    out[i].metrics.accuracy_by_epoch = {{1, 0.8}, {2, 0.85}};
    out[i].metrics.loss_by_step = {{10, 1.0}, {20, 0.5}};
  }
  return out;
}

TEST(StudyPlotsTest, FourPlotsInBothFormats) {
  auto outcomes = TwoScales();
  StudyPlots p = MakeStudyPlots(MakeScalingRows(outcomes), outcomes);
  EXPECT_THAT(p.plots, ::testing::ElementsAre("throughput", "efficiency", "accuracy", "loss"));
  EXPECT_TRUE(p.skipped.empty());
  for (const char* out : {"throughput.png", "throughput.svg", "efficiency.png", "efficiency.svg",
                          "accuracy.png", "accuracy.svg", "loss.png", "loss.svg"}) {
    EXPECT_THAT(p.script, HasSubstr(absl::StrCat("set output '", out, "'"))) << out;
  }
  EXPECT_THAT(p.script, HasSubstr("set terminal pngcairo"));
  EXPECT_THAT(p.script, HasSubstr("set terminal svg"));
  EXPECT_THAT(p.script, HasSubstr("'accuracy-n1-p2.dat' using 1:2"));
  EXPECT_THAT(p.script, HasSubstr("title 'ideal"));
  ASSERT_FALSE(p.data_files.empty());
  EXPECT_EQ(p.data_files[0].name, "throughput.dat");
  // Ideal line: the baseline's rate times the workers; efficiency in percent.
  EXPECT_THAT(p.data_files[0].text, HasSubstr("1 90.000 90.000 100.000\n2 180.000 180.000 100.000\n"));
}

TEST(StudyPlotsTest, CommandWithoutReportsDrawsNothingAndSaysWhy) {
  std::vector<ScaleOutcome> outcomes(1);
  outcomes[0].scale = Scale{1, 1};
  StudyPlots p = MakeStudyPlots(MakeScalingRows(outcomes), outcomes);
  EXPECT_TRUE(p.plots.empty());
  EXPECT_EQ(p.skipped.size(), 3u);
  EXPECT_THAT(p.script, Not(HasSubstr("\nplot ")));
}

TEST(StudyReportHtmlTest, EmbedsTableAndPlots) {
  auto outcomes = TwoScales();
  outcomes[1].exit_code = 1;
  auto rows = MakeScalingRows(outcomes);
  StudyPlots p = MakeStudyPlots(rows, outcomes);
  StudyInfo info{"cnn-scale-1", "job<1>.yaml", "2026-11-23T10:00:00Z", "dlaunch scale x"};
  const std::string html = StudyReportHtml(info, rows, p);
  EXPECT_THAT(html, HasSubstr("<!DOCTYPE html>"));
  EXPECT_THAT(html, HasSubstr("job&lt;1&gt;.yaml"));
  EXPECT_THAT(html, HasSubstr("<th>samples_per_sec</th>"));
  EXPECT_THAT(html, HasSubstr("<td class=\"failed\">failed (exit 1)</td>"));
  EXPECT_THAT(html, HasSubstr("<img src=\"throughput.png\""));
  EXPECT_THAT(html, HasSubstr("<a href=\"loss.svg\"><img src=\"loss.png\""));
}

TEST(StudyJsonTest, NamesEveryScaleAndItsRun) {
  auto outcomes = TwoScales();
  auto rows = MakeScalingRows(outcomes);
  const std::string json = StudyJson(StudyInfo{"s1", "job.yaml", "t", "c"}, rows, outcomes, 0);
  EXPECT_THAT(json, HasSubstr("\"study_id\":\"s1\""));
  EXPECT_THAT(json, HasSubstr("\"run_dir\":\"n1-p2\""));
  EXPECT_THAT(json, HasSubstr("\"result\":\"succeeded\""));
}

TEST(StudyExitCodeTest, FirstFailureWins) {
  std::vector<ScalingRow> rows(3);
  rows[0].ok = rows[2].ok = true;
  EXPECT_EQ(StudyExitCode(rows), 1);  // failed without a code of its own
  rows[1].exit_code = 3;
  EXPECT_EQ(StudyExitCode(rows), 3);
  rows[1].ok = true;
  EXPECT_EQ(StudyExitCode(rows), 0);
}

}  // namespace
}  // namespace dlaunch
