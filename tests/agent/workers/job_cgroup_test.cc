// JobCgroup's pure parts: where this process's cgroup v2 is (hybrid and pure v2 nodes, a
// namespaced or bind-mounted subtree), the cgroup's name, cgroup.procs. The cgroup itself is
// made and emptied for real in tests/agent/process/job_cgroup_process_test.cc.
#include "agent/workers/job_cgroup.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace dlaunch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kHybridMounts[] =
    "25 30 0:22 / /sys/fs/cgroup ro,nosuid shared:9 - tmpfs tmpfs ro,mode=755\n"
    "26 25 0:23 / /sys/fs/cgroup/unified rw,nosuid,nodev shared:10 - cgroup2 cgroup2 rw\n"
    "28 25 0:25 / /sys/fs/cgroup/memory rw,nosuid shared:12 - cgroup cgroup rw,memory\n";
constexpr char kPureV2Mounts[] =
    "35 24 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 "
    "rw,nsdelegate,memory_recursiveprot\n";

TEST(CgroupV2DirTest, UnderTheCgroup2MountOfAPureOrHybridNode) {
  auto dir = CgroupV2Dir("0::/user.slice/user-1000.slice/session-3.scope\n", kPureV2Mounts);
  ASSERT_TRUE(dir.ok()) << dir.status();
  EXPECT_EQ(*dir, "/sys/fs/cgroup/user.slice/user-1000.slice/session-3.scope");
  // Hybrid: v1 controllers beside the unified hierarchy, the process at its root.
  dir = CgroupV2Dir("9:name=systemd:/\n4:memory:/x\n0::/\n", kHybridMounts);
  ASSERT_TRUE(dir.ok()) << dir.status();
  EXPECT_EQ(*dir, "/sys/fs/cgroup/unified");
}

TEST(CgroupV2DirTest, ABindMountedSubtreeMapsThePathUnderIt) {
  const std::string mounts =
      "40 30 0:30 /slurm/job_7 /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
  auto dir = CgroupV2Dir("0::/slurm/job_7/step_0\n", mounts);
  ASSERT_TRUE(dir.ok()) << dir.status();
  EXPECT_EQ(*dir, "/sys/fs/cgroup/step_0");
  dir = CgroupV2Dir("0::/slurm/job_7\n", mounts);
  ASSERT_TRUE(dir.ok());
  EXPECT_EQ(*dir, "/sys/fs/cgroup");
  EXPECT_THAT(std::string(CgroupV2Dir("0::/elsewhere\n", mounts).status().message()),
              HasSubstr("not under a cgroup v2 mount"));
}

TEST(CgroupV2DirTest, AnEscapedMountPointIsUnescaped) {
  auto dir = CgroupV2Dir("0::/a\n", "1 2 0:1 / /mnt/my\\040cgroups rw - cgroup2 none rw\n");
  ASSERT_TRUE(dir.ok());
  EXPECT_EQ(*dir, "/mnt/my cgroups/a");
}

TEST(CgroupV2DirTest, SaysWhatIsMissing) {
  EXPECT_THAT(std::string(CgroupV2Dir("4:memory:/x\n", kHybridMounts).status().message()),
              HasSubstr("no cgroup v2 hierarchy"));
  const std::string v1_only = "28 25 0:25 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n";
  absl::Status st = CgroupV2Dir("0::/\n", v1_only).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(st.message()), HasSubstr("not mounted"));
}

TEST(JobCgroupNameTest, OnlySafeBytesAndBounded) {
  EXPECT_EQ(JobCgroupName("20240101-abc", "node-3:4242:a1b2c3"),
            "dlaunch-20240101-abc-node-3-4242-a1b2c3");
  EXPECT_EQ(JobCgroupName("a/b", "x y\n"), "dlaunch-a-b-x-y-");
  EXPECT_EQ(JobCgroupName("dlaunch-job-20240101", "h:1:f"), "dlaunch-job-20240101-h-1-f");
  EXPECT_EQ(JobCgroupName(std::string(500, 'j'), "a").size(), 200u);
}

TEST(OwnerOfJobCgroupTest, TheAgentsPidFromItsId) {
  EXPECT_EQ(OwnerOfJobCgroup(JobCgroupName("job-7", "node-3:4242:a1b2c3")), 4242);
  EXPECT_EQ(OwnerOfJobCgroup("dlaunch-x-h-17-ff"), 17);
  EXPECT_EQ(OwnerOfJobCgroup("system.slice"), std::nullopt);
  EXPECT_EQ(OwnerOfJobCgroup("dlaunch-x-h-notapid-ff"), std::nullopt);
  EXPECT_EQ(OwnerOfJobCgroup("dlaunch-1-2"), std::nullopt);
}

TEST(ParseCgroupProcsTest, OnePidPerLine) {
  EXPECT_THAT(ParseCgroupProcs("12\n345\n\n"), ElementsAre(12, 345));
  EXPECT_TRUE(ParseCgroupProcs("").empty());
}

}  // namespace
}  // namespace dlaunch
