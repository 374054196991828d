// The preflight's checks on made-up figures (GPUs, their processes, disk, clock) and which checks
// a plan runs. The command check, which runs Python, and the ports check, which binds a socket,
// are tested in process/preflight_process_test.cc.
#include "agent/health/preflight.h"

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/agent/preflight_plans.h"

namespace dlaunch {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::string TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "preflight-test-XXXXXX").string();
  char* made = mkdtemp(tmpl.data());
  return made ? made : "";
}

using preflight_testing::CommandPlan;

TEST(PreflightGpusTest, FewerGpusThanTheJobNeedsFails) {
  v1::CheckResult r = CheckGpus(4, 2, "nvml");
  EXPECT_EQ(r.verdict(), v1::CheckResult::FAILED);
  EXPECT_EQ(r.detail(), "sees 2 GPU(s) (nvml), the job needs 4 (gpus.per_node)");
  EXPECT_EQ(CheckGpus(4, 4, "nvml").verdict(), v1::CheckResult::PASSED);
  EXPECT_EQ(CheckGpus(0, 0, "none").verdict(), v1::CheckResult::PASSED);
}

TEST(PreflightGpuProcessesTest, AProcessOnAGpuFailsNamingItsOwnerAndMemory) {
  PreflightNode node;
  node.gpus_seen = 2;
  node.gpu_processes = std::vector<GpuProcess>{{"1", 4242, uint64_t{3} << 30}};
  node.owner_of = [](int pid) { return pid == 4242 ? std::string("bob") : std::string("?"); };
  v1::CheckResult r = CheckGpuProcesses(node);
  EXPECT_EQ(r.verdict(), v1::CheckResult::FAILED);
  EXPECT_EQ(r.detail(), "GPUs already in use: GPU 1: pid 4242 of bob, 3.0 GiB");

  node.gpu_processes = std::vector<GpuProcess>{};
  EXPECT_EQ(CheckGpuProcesses(node).verdict(), v1::CheckResult::PASSED);
  node.gpu_processes.reset();
  node.gpu_processes_unavailable = "nvmlInit_v2 failed";
  EXPECT_EQ(CheckGpuProcesses(node).verdict(), v1::CheckResult::SKIPPED);
  EXPECT_THAT(CheckGpuProcesses(node).detail(), HasSubstr("nvmlInit_v2 failed"));
}

TEST(PreflightDiskTest, ADirectoryShortOfSpaceFailsWithTheFigure) {
  v1::PreflightPlan plan;
  for (const auto& [path, what] : std::vector<std::pair<std::string, std::string>>{
           {"/jobs/j1", "job directory"}, {"/tmp", "TMPDIR"}}) {
    v1::PathNeed* n = plan.add_paths();
    n->set_path(path);
    n->set_what(what);
    n->set_min_free_bytes(int64_t{1} << 30);
  }
  PreflightNode node;
  node.disk_free = [](const std::string& path) -> absl::StatusOr<DiskFree> {
    if (path == "/tmp") return DiskFree{int64_t{400} << 20, int64_t{8} << 30};
    return DiskFree{int64_t{50} << 30, int64_t{100} << 30};
  };
  v1::CheckResult r = CheckDisk(plan, node);
  EXPECT_EQ(r.verdict(), v1::CheckResult::FAILED);
  EXPECT_EQ(r.detail(), "TMPDIR /tmp: 0.4 GiB free, needs 1.0 GiB (preflight.min_free)");
}

TEST(PreflightDiskTest, AJobDirectoryNotMadeYetIsMeasuredAtItsNearestParent) {
  const std::string dir = TempDir();
  absl::StatusOr<DiskFree> free = StatDiskFree(dir + "/runs/job-1/checkpoints");
  ASSERT_TRUE(free.ok()) << free.status();
  EXPECT_GT(free->total_bytes, 0);
  std::filesystem::remove_all(dir);
}

TEST(PreflightClockTest, TheOffsetIsJudgedAgainstTheRoundTrip) {
  // The launcher answered at 10 000; the agent asked at 9 000 and heard at 9 100: 950 ms behind.
  v1::CheckResult behind = CheckClock(10000, 9000, 9100, 500);
  EXPECT_EQ(behind.verdict(), v1::CheckResult::FAILED);
  EXPECT_THAT(behind.detail(), HasSubstr("-0.950 s against the launcher (+/- 0.050 s)"));
  EXPECT_EQ(CheckClock(10000, 9000, 9100, 2000).verdict(), v1::CheckResult::PASSED);
  // A long round trip leaves room: the launcher may have read its clock at either end.
  EXPECT_EQ(CheckClock(10000, 8000, 11000, 1000).verdict(), v1::CheckResult::PASSED);
  EXPECT_EQ(CheckClock(10000, 0, 0, 0).verdict(), v1::CheckResult::SKIPPED);
}

TEST(PreflightTest, ADisabledPlanChecksNothingAndAnEnabledOneEveryCheckOnce) {
  v1::PreflightPlan off;
  EXPECT_THAT(RunPreflight(off, PreflightNode{}), IsEmpty());
  v1::PreflightPlan plan = CommandPlan({"true"}, "/");
  PreflightNode node;
  node.env = {{"PATH", "/bin:/usr/bin"}};
  std::vector<v1::CheckResult> checks = RunPreflight(plan, node);
  std::vector<std::string> names;
  for (const auto& c : checks) names.push_back(c.name());
  EXPECT_THAT(names, ::testing::ElementsAre("gpus", "gpu processes", "disk", "command", "ports",
                                            "clock"));
  for (const auto& c : checks) EXPECT_NE(c.verdict(), v1::CheckResult::FAILED) << c.name();
}

}  // namespace
}  // namespace dlaunch
