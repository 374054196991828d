// job.yaml's `study:` section (the scales `dlaunch scale` runs), its errors and its round trip.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "launcher/spec/job_spec_parser.h"
#include "launcher/spec/resolved_job_yaml.h"

namespace dlaunch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

absl::StatusOr<JobSpec> Parse(const std::string& study) {
  return ParseJobSpec("command: [dlaunch-worker]\n" + study, "job.yaml");
}

TEST(StudySectionTest, ListsOrCommaStrings) {
  auto spec = Parse("study:\n  nodes: [1, 2, 4]\n  procs: \"1,2\"\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_THAT(spec->study_nodes, ElementsAre(1, 2, 4));
  EXPECT_THAT(spec->study_procs, ElementsAre(1, 2));
}

TEST(StudySectionTest, AbsentMeansNoStudy) {
  auto spec = Parse("");
  ASSERT_TRUE(spec.ok());
  EXPECT_THAT(spec->study_nodes, IsEmpty());
  EXPECT_THAT(spec->study_procs, IsEmpty());
  EXPECT_THAT(ResolvedJobYaml(*spec), ::testing::Not(HasSubstr("study:")));
}

TEST(StudySectionTest, BadValuesPointAtTheKey) {
  for (const char* bad : {"study:\n  nodes: []\n", "study:\n  nodes: [1, 0]\n",
                          "study:\n  nodes: [1, x]\n", "study:\n  nodes: [2, 2]\n",
                          "study:\n  nodes: {a: 1}\n", "study:\n  nodes: \"1,,2\"\n"}) {
    auto spec = Parse(bad);
    ASSERT_FALSE(spec.ok()) << bad;
    EXPECT_THAT(spec.status().message(), HasSubstr("job.yaml:3:")) << bad;
    EXPECT_THAT(spec.status().message(), HasSubstr("study.nodes must be a list of positive counts"))
        << bad;
  }
}

TEST(StudySectionTest, UnknownKeyGetsDidYouMean) {
  auto spec = Parse("study:\n  node: [1, 2]\n");
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(spec.status().message(), HasSubstr("job.yaml:3:3:"));
  EXPECT_THAT(spec.status().message(), HasSubstr("did you mean 'nodes'"));
}

TEST(StudySectionTest, ResolvedSpecRoundTrips) {
  auto spec = Parse("study:\n  nodes: [1, 2]\n  procs: [4]\n");
  ASSERT_TRUE(spec.ok());
  auto again = ParseJobSpec(ResolvedJobYaml(*spec), "job.yaml");
  ASSERT_TRUE(again.ok()) << again.status() << "\n" << ResolvedJobYaml(*spec);
  EXPECT_THAT(again->study_nodes, ElementsAre(1, 2));
  EXPECT_THAT(again->study_procs, ElementsAre(4));
}

}  // namespace
}  // namespace dlaunch
