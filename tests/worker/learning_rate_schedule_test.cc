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

TEST(LearningRateScheduleTest, CosineDecaysFromTheTargetAfterTheWarmUp) {
  // 2 ranks, 10 steps per epoch, warm-up 1 epoch, 110 steps: cosine over steps 10..109.
  LearningRateSchedule s(0.1, 2, 1, 10, LearningRateDecay::kCosine, 110);
  EXPECT_DOUBLE_EQ(s.At(0), 0.1);          // the warm-up is unchanged
  EXPECT_NEAR(s.At(5), 0.15, 1e-12);
  EXPECT_DOUBLE_EQ(s.At(10), 0.2);         // the target, where the decay starts
  EXPECT_NEAR(s.At(60), 0.1, 1e-12);       // half way: half the target
  EXPECT_GT(s.At(109), 0.0);               // the last step still moves the weights
  EXPECT_LT(s.At(109), 0.001);
  for (int64_t step = 11; step < 110; ++step) EXPECT_LT(s.At(step), s.At(step - 1)) << step;
  EXPECT_DOUBLE_EQ(s.At(500), 0.0);        // past the last step it stays at 0
}

TEST(LearningRateScheduleTest, CosineWithoutWarmUpStartsAtTheTarget) {
  LearningRateSchedule s(0.01, 4, 0, 100, LearningRateDecay::kCosine, 200);
  EXPECT_DOUBLE_EQ(s.At(0), 0.04);
  EXPECT_NEAR(s.At(100), 0.02, 1e-12);
}

}  // namespace
}  // namespace dlaunch::worker
