#include "worker/restart_resume.h"

#include "gtest/gtest.h"

namespace dlaunch::worker {
namespace {

WorkerOptions WithCheckpoints(bool resume_flag) {
  WorkerOptions o;
  o.checkpoint_dir = "ckpt";
  o.resume = resume_flag;
  return o;
}

TEST(PlanResumeTest, TheFirstRoundResumesOnlyWhenAsked) {
  EXPECT_FALSE(PlanResume(WithCheckpoints(false), 0).resume);
  EXPECT_TRUE(PlanResume(WithCheckpoints(false), 0).note.empty());
  EXPECT_TRUE(PlanResume(WithCheckpoints(true), 0).resume);
}

TEST(PlanResumeTest, EveryRestartResumesFromTheCheckpointDirectoryAndSaysSo) {
  for (int restart : {1, 7}) {
    ResumePlan plan = PlanResume(WithCheckpoints(false), restart);
    EXPECT_TRUE(plan.resume) << restart;
    EXPECT_EQ(plan.note, "restart " + std::to_string(restart) +
                             ": resuming from the newest complete checkpoint in ckpt");
  }
  // --resume given too: the resume's own lines say what it found.
  ResumePlan asked = PlanResume(WithCheckpoints(true), 2);
  EXPECT_TRUE(asked.resume);
  EXPECT_TRUE(asked.note.empty());
}

TEST(PlanResumeTest, ARestartWithoutACheckpointDirectoryStartsOverAndSaysSo) {
  ResumePlan plan = PlanResume(WorkerOptions{}, 3);
  EXPECT_FALSE(plan.resume);
  EXPECT_EQ(plan.note, "restart 3 without --checkpoint-dir: training starts again from step 0");
}

}  // namespace
}  // namespace dlaunch::worker
