#include "worker/step_trace.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/testing/test_files.h"

namespace dlaunch::worker {
namespace {

using ::testing::HasSubstr;
using ::testing::SizeIs;
using Clock = StepTrace::Clock;

Clock::time_point At(int64_t us) { return Clock::time_point(std::chrono::microseconds(us)); }

TEST(StepSamplerTest, KeepsEveryStepOfTheFirstWindowThenHalvesPerWindow) {
  StepSampler s(3);
  std::vector<int> taken;
  std::vector<int64_t> strides;
  for (int step = 1; step <= 30; ++step) {
    if (s.Take()) {
      taken.push_back(step);
      strides.push_back(s.stride());
    }
  }
  EXPECT_THAT(taken, ::testing::ElementsAre(1, 2, 3, 5, 7, 9, 13, 17, 21, 29));
  EXPECT_THAT(strides, ::testing::ElementsAre(1, 1, 1, 2, 2, 2, 4, 4, 4, 8));
}

TEST(StepSamplerTest, StridesAddUpToTheStepsSeenAtEachRecordedStep) {
  StepSampler s(100);
  int64_t represented = 0, last_taken = 0;
  for (int64_t step = 1; step <= 100000; ++step) {
    if (s.Take()) {
      represented += s.stride();
      last_taken = step;
      EXPECT_EQ(represented, step);
    }
  }
  EXPECT_GT(last_taken, 100000 - 1024);
}

TEST(StepSamplerTest, LinesGrowWithTheLogarithmOfTheSteps) {
  StepSampler s(500);
  int lines = 0;
  for (int64_t step = 0; step < 1000000; ++step) lines += s.Take();
  EXPECT_LT(lines, 500 * 13);  // 1 + log2(1e6 / 500) windows
  EXPECT_GT(lines, 500 * 10);
}

class StepTraceTest : public ::testing::Test {
 protected:
  StepTrace Make(int64_t window) {
    return StepTrace(
        3,
        [this](const std::string& l) {
          lines_.push_back(l);
          return ok_;
        },
        window, 1'000'000'000);
  }
  std::vector<std::string> lines_;
  bool ok_ = true;
};

TEST_F(StepTraceTest, HeaderSaysRankClockAndSampling) {
  Make(500);
  ASSERT_THAT(lines_, SizeIs(1));
  EXPECT_THAT(lines_[0], HasSubstr("\"trace\":\"dlaunch-step-trace\""));
  EXPECT_THAT(lines_[0], HasSubstr("\"rank\":3"));
  EXPECT_THAT(lines_[0], HasSubstr("\"clock\":\"unix_us\""));
  EXPECT_THAT(lines_[0], HasSubstr("every step for the first 500 recorded"));
}

TEST_F(StepTraceTest, StepPhasesAreDurationsFromTheBoundaries) {
  StepTrace t = Make(500);
  t.Step(7, {At(100), At(150), At(400), At(1000), At(1100)});
  ASSERT_THAT(lines_, SizeIs(2));
  EXPECT_EQ(lines_[1],
            "{\"step\":7,\"ts\":1000000100,\"data\":50,\"forward\":250,\"backward\":600,"
            "\"optimizer\":100,\"stride\":1}");
}

TEST_F(StepTraceTest, SpansBetweenStepsCarryTheirName) {
  StepTrace t = Make(500);
  t.Span("checkpoint", 20, At(5000), At(9000));
  ASSERT_THAT(lines_, SizeIs(2));
  EXPECT_EQ(lines_[1],
            "{\"span\":\"checkpoint\",\"step\":20,\"ts\":1000005000,\"dur\":4000,\"stride\":1}");
}

TEST_F(StepTraceTest, LongRunsAreSampled) {
  StepTrace t = Make(2);
  for (int step = 1; step <= 10; ++step) t.Step(step, {At(0), At(1), At(2), At(3), At(4)});
  // Header, steps 1 and 2, then 1 in 2 (4, 6), then 1 in 4 (10).
  ASSERT_THAT(lines_, SizeIs(6));
  EXPECT_THAT(lines_[3], HasSubstr("\"step\":4,"));
  EXPECT_THAT(lines_[3], HasSubstr("\"stride\":2"));
  EXPECT_THAT(lines_[5], HasSubstr("\"step\":10,"));
  EXPECT_THAT(lines_[5], HasSubstr("\"stride\":4"));
}

TEST_F(StepTraceTest, AFailedWriteStopsTheTraceAndIsKept) {
  StepTrace t = Make(500);
  ok_ = false;
  t.Step(1, {At(0), At(1), At(2), At(3), At(4)});
  t.Step(2, {At(0), At(1), At(2), At(3), At(4)});
  EXPECT_EQ(t.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(lines_, SizeIs(2)) << "nothing is written after the failure";
}

TEST(OpenStepTraceTest, NoJobDirectoryMeansNoTrace) {
  auto trace = OpenStepTrace(MapEnvironment({}), 0);
  ASSERT_TRUE(trace.ok());
  EXPECT_EQ(*trace, nullptr);
}

TEST(OpenStepTraceTest, AppendsToTheRankFileInTheJobDirectory) {
  ScratchDir scratch("step-trace");
  const std::string dir = scratch.path();
  for (int run = 0; run < 2; ++run) {  // a restarted worker continues the file
    auto trace = OpenStepTrace(MapEnvironment({{"DLAUNCH_JOB_DIR", dir}}), 2);
    ASSERT_TRUE(trace.ok()) << trace.status();
    ASSERT_NE(*trace, nullptr);
    (*trace)->Step(1, {At(0), At(1), At(2), At(3), At(4)});
  }
  const std::string text = ReadFile(dir + "/trace/rank-2.jsonl");
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 4) << text;
}

TEST(OpenStepTraceTest, AnUnwritableJobDirectoryIsAnError) {
  auto trace = OpenStepTrace(MapEnvironment({{"DLAUNCH_JOB_DIR", "/proc/no-such-dir"}}), 0);
  EXPECT_FALSE(trace.ok());
}

}  // namespace
}  // namespace dlaunch::worker
