#include "worker/loss_scaler.h"

#include "gtest/gtest.h"

namespace dlaunch::worker {
namespace {

TEST(LossScalerTest, StartsAtGradScalerDefaults) {
  LossScaler s;
  EXPECT_EQ(s.scale(), 65536.0);
  EXPECT_EQ(s.good_steps(), 0);
  EXPECT_EQ(s.UnscaleFactor(), 1.0 / 65536.0);
}

TEST(LossScalerTest, NonFiniteSkipsTheStepAndHalvesTheScale) {
  LossScaler s(1024.0, 17);
  EXPECT_FALSE(s.Update(/*finite=*/false));
  EXPECT_EQ(s.scale(), 512.0);
  EXPECT_EQ(s.good_steps(), 0);
  EXPECT_EQ(s.UnscaleFactor(), 1.0 / 512.0);
}

TEST(LossScalerTest, DoublesAfterTheGrowthIntervalOfFiniteSteps) {
  LossScaler s(1024.0, 0);
  for (int64_t i = 1; i < LossScaler::kGrowthInterval; ++i) {
    ASSERT_TRUE(s.Update(true));
    ASSERT_EQ(s.scale(), 1024.0);
    ASSERT_EQ(s.good_steps(), i);
  }
  EXPECT_TRUE(s.Update(true));
  EXPECT_EQ(s.scale(), 2048.0);
  EXPECT_EQ(s.good_steps(), 0);
}

TEST(LossScalerTest, ResumedCountContinues) {
  LossScaler s(8.0, LossScaler::kGrowthInterval - 1);
  EXPECT_TRUE(s.Update(true));
  EXPECT_EQ(s.scale(), 16.0);
  EXPECT_FALSE(s.Update(false));
  EXPECT_EQ(s.scale(), 8.0);
}

}  // namespace
}  // namespace dlaunch::worker
