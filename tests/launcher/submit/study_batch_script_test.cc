// A job spec with a `study:` section renders a batch script that runs the whole study
// (`dlaunch scale`) in the one allocation; without it, the script runs `dlaunch run`.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace dlaunch
