// The example job files render for their sites as shipped, and the resolved spec a job
// directory keeps parses back to the same job. Pure: reads only the source tree.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "launcher/jobdir/job_record.h"
#include "launcher/spec/job_spec_parser.h"
#include "launcher/submit/batch_script.h"
#include "launcher/submit/site_profile.h"

namespace dlaunch {
namespace {

using ::testing::HasSubstr;

class ExampleTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ExampleTest, LoadsAndRendersWithoutEdits) {
  const std::string path = absl::StrCat(DLAUNCH_SOURCE_DIR, "/examples/", GetParam(), ".yaml");
  absl::StatusOr<JobSpec> spec = LoadJobSpec(path);
  ASSERT_TRUE(spec.ok()) << spec.status();
  absl::StatusOr<SiteProfile> profile = LoadSiteProfile(
      DefaultSiteName(spec->scheduler.site, spec->scheduler.type),
      MakeSiteSearchPath("", "", "", {std::string(DLAUNCH_SOURCE_DIR) + "/templates"}));
  ASSERT_TRUE(profile.ok()) << profile.status();
  RenderContext ctx;
  ctx.job_id = MakeJobId(spec->name, absl::Now(), 0xa3f9);
  ctx.job_dir = "/home/user/proj/runs/" + ctx.job_id;
  ctx.resolved_spec_path = ctx.job_dir + "/job.yaml";
  ctx.dlaunch_binary = "/opt/dlaunch/bin/dlaunch";
  ctx.submit_cwd = "/home/user/proj";
  absl::StatusOr<std::string> script = RenderBatchScript(*spec, *profile, ctx);
  ASSERT_TRUE(script.ok()) << script.status();
  EXPECT_THAT(*script, HasSubstr(" run /home/user/proj/runs/"));
  // The resolved spec the job directory keeps parses back to the same job.
  absl::StatusOr<JobSpec> again = ParseJobSpec(ResolvedJobYaml(*spec), "job.yaml");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->scheduler.site, spec->scheduler.site);
}

INSTANTIATE_TEST_SUITE_P(Examples, ExampleTest,
                         ::testing::Values("polaris", "thetagpu", "slurm"));

}  // namespace
}  // namespace dlaunch
