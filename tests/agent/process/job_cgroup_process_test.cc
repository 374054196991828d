// JobCgroup for real, where this machine lets the test make a cgroup v2 under its own (root in
// a container, or a delegated subtree); skipped, saying why, elsewhere. A child enters it
// before exec (SpawnOptions::cgroup_procs_fd), starts a daemon that leaves its session and
// ignores SIGTERM, and KillAll ends them all; the cgroup is gone with the object.
#include "agent/workers/job_cgroup.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/file_io.h"
#include "common/host_identity.h"
#include "common/process.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/wait_for.h"

namespace dlaunch {
namespace {

using ::testing::SizeIs;

bool Alive(pid_t pid) {
  absl::StatusOr<std::string> stat = ReadFile(absl::StrCat("/proc/", pid, "/stat"));
  return stat.ok() && !absl::StrContains(stat->substr(stat->rfind(')')), ") Z");
}

TEST(JobCgroupProcessTest, EverythingAChildStartsIsKilledAndTheCgroupRemoved) {
  auto cgroup = JobCgroup::CreateForThisProcess(JobCgroupName("test", RandomHex(8)));
  if (!cgroup.ok()) GTEST_SKIP() << "no cgroup v2 this test may make: " << cgroup.status();
  const std::string dir = (*cgroup)->dir();
  EXPECT_TRUE((*cgroup)->Pids().empty());
  EXPECT_TRUE((*cgroup)->KillAll().empty());

  SpawnOptions options;
  options.capture_output = false;
  options.cgroup_procs_fd = (*cgroup)->procs_fd();
  // The daemon: its own session, deaf to SIGTERM; the child waits on it.
  options.argv = {"/bin/sh", "-c", "setsid sh -c 'trap \"\" TERM; sleep 300' & sleep 300"};
  absl::StatusOr<PendingProcess> pending = ForkProcess(options);
  ASSERT_TRUE(pending.ok()) << pending.status();
  absl::StatusOr<SpawnedProcess> child = AwaitExec(*std::move(pending));
  ASSERT_TRUE(child.ok()) << child.status();
  EXPECT_THAT(*ReadFile(absl::StrCat("/proc/", child->pid, "/cgroup")),
              ::testing::HasSubstr(dir.substr(dir.rfind('/'))));
  // The child, the daemon's shell and two sleeps.
  ASSERT_TRUE(WaitFor([&] { return (*cgroup)->Pids().size() >= 4; }, std::chrono::seconds(30)))
      << (*cgroup)->Pids().size();
  const std::vector<pid_t> pids = (*cgroup)->Pids();

  std::vector<std::string> killed = (*cgroup)->KillAll();
  EXPECT_GE(killed.size(), 4u);
  EXPECT_THAT((*cgroup)->DescribeKilled(killed), ::testing::HasSubstr("left in cgroup dlaunch-test-"));
  EXPECT_TRUE((*cgroup)->Pids().empty());
  int status = 0;
  ASSERT_EQ(WaitChild(child->pid, &status, 0), child->pid);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
  // The others were init's (or a subreaper's) to reap; none is still running.
  for (pid_t pid : pids) {
    EXPECT_TRUE(WaitFor([&] { return !Alive(pid); }, std::chrono::seconds(10))) << pid;
  }
  cgroup->reset();
  EXPECT_FALSE(std::filesystem::exists(dir));
}

// An agent killed with SIGKILL leaves its (empty) cgroup; the next agent's Create removes it,
// and leaves a live agent's alone.
TEST(JobCgroupProcessTest, TheEmptyCgroupsOfAgentsThatAreGoneAreRemoved) {
  auto mine = JobCgroup::CreateForThisProcess(JobCgroupName("test", RandomHex(8)));
  if (!mine.ok()) GTEST_SKIP() << "no cgroup v2 this test may make: " << mine.status();
  const std::string parent = (*mine)->dir().substr(0, (*mine)->dir().rfind('/'));
  const pid_t gone = fork();
  if (gone == 0) _exit(0);
  int status = 0;
  ASSERT_EQ(waitpid(gone, &status, 0), gone);
  const std::string stale = absl::StrCat(parent, "/", JobCgroupName("test", absl::StrCat("h:", gone, ":ff")));
  const std::string live = absl::StrCat(parent, "/", JobCgroupName("test", absl::StrCat("h:", getpid(), ":ff")));
  ASSERT_EQ(mkdir(stale.c_str(), 0755), 0) << stale;
  ASSERT_EQ(mkdir(live.c_str(), 0755), 0) << live;
  auto next = JobCgroup::Create(parent, JobCgroupName("test", RandomHex(8)));
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_FALSE(std::filesystem::exists(stale));
  EXPECT_TRUE(std::filesystem::exists(live));
  rmdir(live.c_str());
  rmdir(stale.c_str());
}

TEST(JobCgroupProcessTest, ACgroupThatCannotBeMadeSaysWhy) {
  auto cgroup = JobCgroup::Create("/proc/nonexistent-cgroup", "dlaunch-x");
  ASSERT_FALSE(cgroup.ok());
  EXPECT_THAT(std::string(cgroup.status().message()),
              ::testing::HasSubstr("/proc/nonexistent-cgroup/cgroup.procs"));
}

}  // namespace
}  // namespace dlaunch
