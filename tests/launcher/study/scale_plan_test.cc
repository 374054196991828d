#include "launcher/study/scale_plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace dlaunch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ParseScaleListTest, ReadsCountsInOrder) {
  auto list = ParseScaleList("--nodes", " 1, 2,4 ");
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_THAT(*list, ElementsAre(1, 2, 4));
}

TEST(ParseScaleListTest, EmptyListIsRefused) {
  for (const char* text : {"", "  "}) {
    auto list = ParseScaleList("--nodes", text);
    ASSERT_FALSE(list.ok());
    EXPECT_EQ(list.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(list.status().message(), HasSubstr("--nodes: empty list"));
  }
}

TEST(ParseScaleListTest, MalformedEntriesAreNamed) {
  for (const char* text : {"1,,2", "1,x", "0,1", "-2", "1.5", "2,"}) {
    auto list = ParseScaleList("--procs", text);
    ASSERT_FALSE(list.ok()) << text;
    EXPECT_THAT(list.status().message(), HasSubstr("--procs: '")) << text;
    EXPECT_THAT(list.status().message(), HasSubstr("not a positive integer")) << text;
  }
}

TEST(ParseScaleListTest, RepeatedCountIsRefused) {
  auto list = ParseScaleList("--nodes", "1,2,1");
  ASSERT_FALSE(list.ok());
  EXPECT_THAT(list.status().message(), HasSubstr("1 appears twice"));
}

TEST(PlanScalesTest, CrossesNodesAndProcsNodesOuter) {
  auto scales = PlanScales({1, 2}, {1, 4}, ScaleLimits{});
  ASSERT_TRUE(scales.ok());
  std::vector<std::string> labels;
  for (const Scale& s : *scales) labels.push_back(s.Label());
  EXPECT_THAT(labels, ElementsAre("n1-p1", "n1-p4", "n2-p1", "n2-p4"));
  EXPECT_EQ((*scales)[3].workers(), 8);
}

TEST(PlanScalesTest, MissingListTakesTheJobsValue) {
  ScaleLimits limits;
  limits.default_nodes = 2;
  limits.default_procs = 0;  // one per GPU
  auto scales = PlanScales({}, {}, limits);
  ASSERT_TRUE(scales.ok());
  ASSERT_EQ(scales->size(), 1u);
  EXPECT_EQ((*scales)[0].Label(), "n2-pgpu");
  auto procs_only = PlanScales({}, {1, 2}, limits);
  ASSERT_TRUE(procs_only.ok());
  EXPECT_EQ((*procs_only)[1].Label(), "n2-p2");
}

TEST(PlanScalesTest, MoreNodesThanTheAllocationNamesBothNumbers) {
  ScaleLimits limits;
  limits.allocation_hosts = 2;
  limits.allocation_source = "PBS_NODEFILE=/var/spool/nodes";
  auto scales = PlanScales({1, 2, 4}, {}, limits);
  ASSERT_FALSE(scales.ok());
  EXPECT_EQ(scales.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(scales.status().message(), HasSubstr("asks for 4 nodes"));
  EXPECT_THAT(scales.status().message(), HasSubstr("allocation has 2"));
  EXPECT_THAT(scales.status().message(), HasSubstr("PBS_NODEFILE"));
  EXPECT_TRUE(PlanScales({1, 2}, {}, limits).ok());
}

TEST(PlanScalesTest, LocallyAnyNodeCountIsAllowed) {
  EXPECT_TRUE(PlanScales({8}, {}, ScaleLimits{}).ok());
}

TEST(ScaleRunArgsTest, RunsTheSpecAtTheScaleIntoItsDirectory) {
  EXPECT_THAT(ScaleRunArgs("/s/job.yaml", Scale{2, 4}, "/r/n2-p4"),
              ElementsAre("run", "/s/job.yaml", "--nnodes", "2", "--nproc-per-node", "4",
                          "--job-dir", "/r/n2-p4"));
  EXPECT_THAT(ScaleRunArgs("j.yaml", Scale{1, 0}, "d"),
              ElementsAre("run", "j.yaml", "--nnodes", "1", "--job-dir", "d"));
}

}  // namespace
}  // namespace dlaunch
