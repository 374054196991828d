#include "launcher/study/scaling_table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_split.h"

namespace dlaunch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

ScaleOutcome Outcome(int procs, int exit_code, double wall, std::optional<double> rate,
                     int epochs = 2) {
  ScaleOutcome o;
  o.scale = Scale{1, procs};
  o.exit_code = exit_code;
  o.wall_time_s = wall;
  o.metrics.world_size = procs;
  o.metrics.samples_per_sec = rate;
  o.metrics.epochs = rate ? epochs : 0;
  if (rate) {
    o.metrics.final_loss = 0.25;
    o.metrics.test_accuracy = 0.9;
    o.metrics.goodput = 0.875;
  }
  return o;
}

TEST(MakeScalingRowsTest, SpeedupAndEfficiencyAgainstTheFirstScale) {
  auto rows = MakeScalingRows({Outcome(1, 0, 100, 1000), Outcome(2, 0, 60, 1800),
                               Outcome(4, 0, 40, 2400)});
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_DOUBLE_EQ(*rows[0].speedup, 1.0);
  EXPECT_DOUBLE_EQ(*rows[0].efficiency, 1.0);
  EXPECT_DOUBLE_EQ(*rows[1].speedup, 1.8);
  EXPECT_DOUBLE_EQ(*rows[1].efficiency, 0.9);
  EXPECT_DOUBLE_EQ(*rows[2].speedup, 2.4);
  EXPECT_DOUBLE_EQ(*rows[2].efficiency, 0.6);
  EXPECT_DOUBLE_EQ(*rows[2].samples_per_sec_per_worker, 600);
  EXPECT_DOUBLE_EQ(*rows[1].time_per_epoch_s, 30);
}

TEST(MakeScalingRowsTest, FailedScaleIsMarkedAndTheBaselineMovesOn) {
  auto rows = MakeScalingRows({Outcome(1, 1, 5, std::nullopt), Outcome(2, 0, 60, 1800),
                               Outcome(4, 0, 40, 2700)});
  EXPECT_FALSE(rows[0].ok);
  EXPECT_EQ(RowStatus(rows[0]), "failed (exit 1)");
  EXPECT_FALSE(rows[0].speedup.has_value());
  EXPECT_DOUBLE_EQ(*rows[1].speedup, 1.0);
  EXPECT_DOUBLE_EQ(*rows[2].speedup, 1.5);
  EXPECT_DOUBLE_EQ(*rows[2].efficiency, 0.75);  // 1.5x on 2x the workers
}

TEST(MakeScalingRowsTest, BaselineIsTheFewestWorkersWhateverTheOrder) {
  auto rows = MakeScalingRows({Outcome(4, 0, 40, 2400), Outcome(1, 0, 100, 1000)});
  EXPECT_DOUBLE_EQ(*rows[0].speedup, 2.4);
  EXPECT_DOUBLE_EQ(*rows[0].efficiency, 0.6);
  EXPECT_DOUBLE_EQ(*rows[1].speedup, 1.0);
}

TEST(MakeScalingRowsTest, NoReportsKeepWallTimeOnly) {
  auto rows = MakeScalingRows({Outcome(1, 0, 3.5, std::nullopt), Outcome(2, 0, 4.0, std::nullopt)});
  EXPECT_TRUE(rows[1].ok);
  EXPECT_FALSE(rows[1].samples_per_sec.has_value());
  EXPECT_FALSE(rows[1].speedup.has_value());
  EXPECT_FALSE(rows[1].time_per_epoch_s.has_value());
  const std::string csv = ScalingCsv(rows);
  EXPECT_THAT(csv, HasSubstr("n1-p2,1,2,2,ok,n/a,n/a,n/a,n/a,n/a,n/a,n/a,n/a,4.0\n"));
}

TEST(ScalingCsvTest, HeaderAndOneLinePerRow) {
  auto rows = MakeScalingRows({Outcome(1, 0, 100, 1000), Outcome(2, 0, 60, 1800)});
  std::vector<std::string> lines = absl::StrSplit(ScalingCsv(rows), '\n', absl::SkipEmpty());
  EXPECT_THAT(lines, ElementsAre(
      "scale,nodes,procs_per_node,workers,status,samples_per_sec,samples_per_sec_per_worker,"
      "speedup,efficiency_pct,time_per_epoch_s,final_loss,test_accuracy_pct,goodput_pct,wall_time_s",
      "n1-p1,1,1,1,ok,1000.0,1000.0,1.00,100.00,50.0,0.2500,90.00,87.50,100.0",
      "n1-p2,1,2,2,ok,1800.0,900.0,1.80,90.00,30.0,0.2500,90.00,87.50,60.0"));
}

TEST(ScalingMarkdownTest, TableWithOneRowPerScale) {
  auto rows = MakeScalingRows({Outcome(1, 0, 100, 1000), Outcome(2, 3, 1, std::nullopt)});
  std::vector<std::string> lines = absl::StrSplit(ScalingMarkdown(rows), '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_THAT(lines[0], HasSubstr("| scale | nodes |"));
  EXPECT_THAT(lines[1], HasSubstr("|:---|---:|"));
  EXPECT_THAT(lines[3], HasSubstr("| failed (exit 3) |"));
}

}  // namespace
}  // namespace dlaunch
