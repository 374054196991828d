// A job spec with a `study:` section renders a batch script that runs the whole study
// (`dlaunch scale`) in the one allocation; without it, the script runs `dlaunch run`.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "launcher/spec/job_spec_parser.h"
#include "launcher/submit/batch_script.h"
#include "tests/launcher/submit/batch_script_fixtures.h"

namespace dlaunch {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using batch_script_fixtures::GoldenContext;
using batch_script_fixtures::Profile;
using batch_script_fixtures::TrainingJob;

TEST(StudyBatchScriptTest, StudySpecRunsDlaunchScale) {
  for (const char* site : {"polaris", "thetagpu", "generic-slurm", "local"}) {
    JobSpec spec = TrainingJob();
    spec.study_nodes = {1, 2};
    spec.study_procs = {4};
    absl::StatusOr<std::string> s = RenderBatchScript(spec, Profile(site), GoldenContext());
    ASSERT_TRUE(s.ok()) << site << ": " << s.status();
    EXPECT_THAT(*s, HasSubstr("exec /opt/dlaunch/bin/dlaunch scale "
                              "/home/user/proj/runs/fmnist-20261121-101530-a3f9/job.yaml "
                              "--job-dir /home/user/proj/runs/fmnist-20261121-101530-a3f9"))
        << site << ":\n" << *s;
    EXPECT_THAT(*s, Not(HasSubstr("dlaunch run "))) << site;
  }
}

TEST(StudyBatchScriptTest, PlainSpecStillRunsDlaunchRun) {
  absl::StatusOr<std::string> s = RenderBatchScript(TrainingJob(), Profile("polaris"), GoldenContext());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(*s, HasSubstr("exec /opt/dlaunch/bin/dlaunch run "));
  EXPECT_THAT(*s, Not(HasSubstr(" scale ")));
}

TEST(StudyBatchScriptTest, PolarisStudyExampleRendersAsShipped) {
  absl::StatusOr<JobSpec> spec =
      LoadJobSpec(std::string(DLAUNCH_SOURCE_DIR) + "/examples/polaris-study.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->study_nodes, (std::vector<int>{1, 2, 4}));
  absl::StatusOr<std::string> s = RenderBatchScript(*spec, Profile("polaris"), GoldenContext());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(*s, HasSubstr("#PBS -l select=4:system=polaris"));
  EXPECT_THAT(*s, HasSubstr("/opt/dlaunch/bin/dlaunch scale "));
}

TEST(StudyBatchScriptTest, LocalStudyExampleLoads) {
  absl::StatusOr<JobSpec> spec =
      LoadJobSpec(std::string(DLAUNCH_SOURCE_DIR) + "/examples/fashion-mnist-study.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->study_procs, (std::vector<int>{1, 2, 4}));
}

}  // namespace
}  // namespace dlaunch
