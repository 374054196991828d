// OomDetector: the memory cgroup of a worker (v1 and v2), its OOM-kill counter before and after,
// the kernel log's record of the kill, and the figures that go into the root cause.
#include "agent/health/oom_detector.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

namespace dlaunch {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kV1Cgroup[] =
    "9:name=systemd:/\n4:memory:/slurm/uid_1000/job_7/step_0\n3:cpuset:/slurm\n0::/\n";
constexpr char kV2Cgroup[] = "0::/system.slice/slurmstepd.scope/job_7\n";

TEST(OomDetectorParseTest, TheMemoryControllersPathInV1) {
  auto cg = ParseMemoryCgroup(kV1Cgroup, "/sys/fs/cgroup", [](const std::string&) { return false; });
  ASSERT_TRUE(cg.has_value());
  EXPECT_FALSE(cg->v2);
  EXPECT_EQ(cg->dir, "/sys/fs/cgroup/memory/slurm/uid_1000/job_7/step_0");
  // The memory controller may share its hierarchy with others.
  cg = ParseMemoryCgroup("5:cpu,memory:/a\n", "/cg", [](const std::string&) { return false; });
  ASSERT_TRUE(cg.has_value());
  EXPECT_EQ(cg->dir, "/cg/memory/a");
}

TEST(OomDetectorParseTest, TheUnifiedHierarchyWhereItsMemoryEventsAre) {
  auto in_root = [](const std::string& p) {
    return p == "/sys/fs/cgroup/system.slice/slurmstepd.scope/job_7/memory.events";
  };
  auto cg = ParseMemoryCgroup(kV2Cgroup, "/sys/fs/cgroup", in_root);
  ASSERT_TRUE(cg.has_value());
  EXPECT_TRUE(cg->v2);
  EXPECT_EQ(cg->dir, "/sys/fs/cgroup/system.slice/slurmstepd.scope/job_7");
  auto in_unified = [](const std::string& p) { return p == "/sys/fs/cgroup/unified/memory.events"; };
  cg = ParseMemoryCgroup("0::/\n", "/sys/fs/cgroup", in_unified);
  ASSERT_TRUE(cg.has_value());
  EXPECT_EQ(cg->dir, "/sys/fs/cgroup/unified");
  EXPECT_FALSE(ParseMemoryCgroup(kV2Cgroup, "/sys/fs/cgroup", [](const std::string&) { return false; }));
}

// The agent's job cgroup has no memory controller of its own: the nearest cgroup up that has
// one is the worker's memory cgroup.
TEST(OomDetectorParseTest, AJobCgroupWithoutTheMemoryControllerUsesTheNearestOneUp) {
  auto in_parent = [](const std::string& p) {
    return p == "/sys/fs/cgroup/system.slice/slurmstepd.scope/memory.events";
  };
  auto cg = ParseMemoryCgroup("0::/system.slice/slurmstepd.scope/dlaunch-j-a\n", "/sys/fs/cgroup",
                              in_parent);
  ASSERT_TRUE(cg.has_value());
  EXPECT_EQ(cg->dir, "/sys/fs/cgroup/system.slice/slurmstepd.scope");
  auto in_unified = [](const std::string& p) { return p == "/sys/fs/cgroup/unified/memory.events"; };
  cg = ParseMemoryCgroup("0::/dlaunch-j-a\n", "/sys/fs/cgroup", in_unified);
  ASSERT_TRUE(cg.has_value());
  EXPECT_EQ(cg->dir, "/sys/fs/cgroup/unified");
}

TEST(OomDetectorParseTest, OomKillCountsAndKernelRecords) {
  EXPECT_EQ(ParseOomKillCount("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n"), 3);
  EXPECT_EQ(ParseOomKillCount("low 0\nhigh 0\nmax 12\noom 2\noom_kill 2\noom_group_kill 0\n"), 2);
  EXPECT_EQ(ParseOomKillCount("under_oom 0\n"), -1);
  const std::string kmsg =
      "6,100,5,-;oom-kill:constraint=CONSTRAINT_MEMCG,task=python3,pid=651,uid=0\n"
      "3,101,6,-;Memory cgroup out of memory: Killed process 651 (python3) total-vm:323768kB\n"
      "3,102,7,-;Out of memory: Killed process 6510 (other) total-vm:1kB\n";
  auto record = FindOomKillRecord(kmsg, 651);
  ASSERT_TRUE(record.has_value());
  EXPECT_EQ(*record, "Memory cgroup out of memory: Killed process 651 (python3) total-vm:323768kB");
  EXPECT_FALSE(FindOomKillRecord(kmsg, 65).has_value());  // not a prefix of another pid
}

// A fake /proc and /sys/fs/cgroup: files by path.
class OomDetectorTest : public ::testing::Test {
 protected:
  OomDetectorTest()
      : detector_([this](const std::string& p) -> absl::StatusOr<std::string> {
                    auto it = files_.find(p);
                    if (it == files_.end()) return absl::NotFoundError(p);
                    return it->second;
                  },
                  [this](const std::string& p) { return files_.count(p) > 0; }, "/cg") {
    files_["/proc/42/cgroup"] = "4:memory:/job\n";
    files_["/cg/memory/job/memory.oom_control"] = "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n";
    files_["/cg/memory/job/memory.limit_in_bytes"] = "67108864\n";
    files_["/cg/memory/job/memory.max_usage_in_bytes"] = "67104768\n";
    files_["/proc/meminfo"] = "MemTotal:        8000000 kB\nMemAvailable:    5000000 kB\n";
  }
  std::map<std::string, std::string> files_;
  OomDetector detector_;
};

TEST_F(OomDetectorTest, ACgroupsRisingOomKillCountNamesItWithTheFigures) {
  detector_.OnStarted(42);
  files_["/cg/memory/job/memory.oom_control"] = "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n";
  auto why = detector_.OnKilled(42);
  ASSERT_TRUE(why.has_value());
  EXPECT_THAT(*why, HasSubstr("cgroup limit 64.0 MiB, peak 64.0 MiB"));
  EXPECT_THAT(*why, HasSubstr("node: 4.8 of 7.6 GiB available"));
}

TEST_F(OomDetectorTest, ASigkillWithoutTheOomKillersMarkIsNotOutOfMemory) {
  detector_.OnStarted(42);
  EXPECT_FALSE(detector_.OnKilled(42).has_value());
}

TEST_F(OomDetectorTest, TheKernelLogNamesItWhenTheCgroupCannotBeRead) {
  files_.erase("/proc/42/cgroup");
  detector_.OnStarted(42);
  files_["/dev/kmsg"] = "3,9,9,-;Out of memory: Killed process 42 (train) total-vm:9kB\n";
  auto why = detector_.OnKilled(42);
  ASSERT_TRUE(why.has_value());
  EXPECT_THAT(*why, HasSubstr("kernel: Out of memory: Killed process 42 (train)"));
  EXPECT_THAT(*why, Not(HasSubstr("cgroup")));
}

}  // namespace
}  // namespace dlaunch
