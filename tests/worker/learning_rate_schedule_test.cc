#include "worker/learning_rate_schedule.h"

#include "gtest/gtest.h"

namespace dlaunch::worker {
namespace {

TEST(LearningRateScheduleTest, ScalesLinearlyWithWorldSize) {
  LearningRateSchedule s(0.01, 4, 0, 100);
  EXPECT_DOUBLE_EQ(s.At(0), 0.04);
  EXPECT_DOUBLE_EQ(s.At(12345), 0.04);
}

TEST(LearningRateScheduleTest, WarmsUpFromBaseToTarget) {
  LearningRateSchedule s(0.1, 8, 2, 50);  // 100 warm-up steps, 0.1 -> 0.8
  EXPECT_DOUBLE_EQ(s.At(0), 0.1);
  EXPECT_NEAR(s.At(50), 0.45, 1e-12);
  EXPECT_LT(s.At(99), 0.8);
  EXPECT_DOUBLE_EQ(s.At(100), 0.8);
  EXPECT_DOUBLE_EQ(s.At(1000), 0.8);
}

TEST(LearningRateScheduleTest, OneRankIsTheBaseRate) {
  LearningRateSchedule s(0.05, 1, 1, 10);
  EXPECT_DOUBLE_EQ(s.At(0), 0.05);
  EXPECT_DOUBLE_EQ(s.At(5), 0.05);
}

}  // namespace
}  // namespace dlaunch::worker
