#include "worker/training_summary.h"

#include "gtest/gtest.h"

namespace dlaunch::worker {
namespace {

TEST(TrainingSummaryTest, OneJsonObjectWithNineDigitDoubles) {
  TrainingSummary s;
  s.model = "cnn";
  s.dataset = "fashion-mnist";
  s.backend = "gloo";
  s.amp = "off";
  s.world_size = 2;
  s.batch_size = 64;
  s.epochs = 1;
  s.steps = 468;
  s.samples_per_sec_total = 12345.678912;
  s.samples_per_sec_per_rank = 6172.839456;
  s.final_loss = 0.25;
  s.wall_time_s = 3;
  s.time_to_first_step_s = 0.5;
  EXPECT_EQ(TrainingSummaryToJson(s),
            "{\"model\": \"cnn\", \"dataset\": \"fashion-mnist\", \"backend\": \"gloo\", "
            "\"amp\": \"off\", \"world_size\": 2, \"batch_size\": 64, \"epochs\": 1, "
            "\"steps\": 468, \"start_step\": 0, \"samples_per_sec_total\": 12345.6789, "
            "\"samples_per_sec_per_rank\": 6172.83946, \"final_loss\": 0.25, "
            "\"test_accuracy\": null, \"wall_time_s\": 3, \"time_to_first_step_s\": 0.5}\n");
}

TEST(TrainingSummaryTest, TestAccuracyAndQuotedStrings) {
  TrainingSummary s;
  s.model = "a\"b";
  s.test_accuracy = 0.8912;
  const std::string json = TrainingSummaryToJson(s);
  EXPECT_NE(json.find("\"model\": \"a\\\"b\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"test_accuracy\": 0.8912,"), std::string::npos) << json;
}

}  // namespace
}  // namespace dlaunch::worker
