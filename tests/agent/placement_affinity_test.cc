// Real processes: the spawner pins a child before exec, and an agent confined by taskset plans
// inside its CPUs while one bound by an MPI launcher plans in the whole allocation. Spawns
// processes (integration-style), kept here because it tests the agent's placement.
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "agent/local_rank_plan.h"
#include "common/process.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dlaunch {
namespace {

using ::testing::HasSubstr;

constexpr char kProbeVar[] = "DLAUNCH_PLACEMENT_PROBE";

// Started with DLAUNCH_PLACEMENT_PROBE=<nproc>, this test binary prints the plan PlanThisNode
// makes for that many CPU-only ranks, one "rank R cpus A,B" line each, and exits before any
// test runs: the tests below start it under taskset, as an agent would be started.
const bool kProbed = [] {
  const char* nproc = std::getenv(kProbeVar);
  if (nproc == nullptr) return false;
  PlacementRequest req;
  req.nproc = std::atoi(nproc);
  std::string note;
  auto plan = PlanThisNode(GpuInventory{{}, "none"}, req, &note);
  if (!plan.ok()) {
    std::printf("error %s\n", std::string(plan.status().message()).c_str());
    std::_Exit(1);
  }
  for (const RankSlot& s : *plan) std::printf("rank %d cpus %s\n", s.local_rank, JoinInts(s.cpus).c_str());
  std::fflush(stdout);
  std::_Exit(0);
}();

struct Result {
  int wait_status = -1;
  std::string out;
};

// Spawns, reads stdout to its end, reaps.
absl::StatusOr<Result> RunToEnd(const SpawnOptions& options) {
  auto p = SpawnProcess(options);
  if (!p.ok()) return p.status();
  Result r;
  char buf[4096];
  for (;;) {
    pollfd fd{p->stdout_fd, POLLIN, 0};
    if (poll(&fd, 1, 20000) <= 0) break;  // 20 s: a hung child fails the test, not the suite
    ssize_t n = read(p->stdout_fd, buf, sizeof(buf));
    if (n <= 0) break;
    r.out.append(buf, n);
  }
  close(p->stdout_fd);
  close(p->stderr_fd);
  waitpid(p->pid, &r.wait_status, 0);
  return r;
}

std::string SelfExe() {
  char path[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  return n > 0 ? std::string(path, n) : std::string();
}

TEST(PlacementAffinityTest, ChildRunsOnlyOnTheCpusItWasGiven) {
  const std::vector<int> allowed = AllowedCpus();
  ASSERT_FALSE(allowed.empty());
  SpawnOptions o;
  o.argv = {"grep", "Cpus_allowed_list", "/proc/self/status"};
  o.cpu_affinity = {allowed.back()};
  auto r = RunToEnd(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->wait_status, 0);
  EXPECT_EQ(r->out, absl::StrCat("Cpus_allowed_list:\t", allowed.back(), "\n"));
}

TEST(PlacementAffinityTest, EmptyAffinityInheritsTheParents) {
  SpawnOptions o;
  o.argv = {"grep", "Cpus_allowed_list", "/proc/self/status"};
  auto r = RunToEnd(o);
  ASSERT_TRUE(r.ok()) << r.status();
  std::string mine;
  std::vector<int> allowed = AllowedCpus();
  // The kernel prints ranges; compare through the same parse.
  std::string list(absl::StripSuffix(absl::StripPrefix(r->out, "Cpus_allowed_list:\t"), "\n"));
  std::vector<int> got;
  for (absl::string_view part : absl::StrSplit(list, ',')) {
    std::vector<std::string> ends = absl::StrSplit(part, '-');
    int lo = std::stoi(ends[0]), hi = std::stoi(ends.back());
    for (int c = lo; c <= hi; ++c) got.push_back(c);
  }
  EXPECT_EQ(got, allowed);
}

TEST(PlacementAffinityTest, AffinityOnAMissingCpuIsAnErrorNamingTheProgram) {
  SpawnOptions o;
  o.argv = {"true"};
  o.cpu_affinity = {4095};
  auto r = SpawnProcess(o);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("cannot set CPU affinity of 'true'"));
}

TEST(PlacementAffinityTest, AgentConfinedByTasksetPlansInsideIt) {
  const std::vector<int> allowed = AllowedCpus();
  ASSERT_FALSE(allowed.empty());
  const int cpu = allowed.front();
  SpawnOptions o;
  o.argv = {"taskset", "-c", std::to_string(cpu), SelfExe()};
  o.envp = {absl::StrCat(kProbeVar, "=2"), "PATH=/usr/bin:/bin"};
  auto r = RunToEnd(o);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->wait_status, 0) << r->out;
  EXPECT_EQ(r->out, absl::StrCat("rank 0 cpus ", cpu, "\nrank 1 cpus ", cpu, "\n"));
}

TEST(PlacementAffinityTest, AgentBoundByAnMpiLauncherPlansInTheAllocation) {
  const std::vector<int> allowed = AllowedCpus();
  if (allowed.size() < 2) GTEST_SKIP() << "needs two CPUs to tell a binding from the allocation";
  // mpirun bound the agent to one CPU; OMPI_COMM_WORLD_SIZE says it is an Open MPI rank.
  SpawnOptions o;
  o.argv = {SelfExe()};
  o.envp = {absl::StrCat(kProbeVar, "=2"), "OMPI_COMM_WORLD_SIZE=1"};
  o.cpu_affinity = {allowed.front()};
  auto r = RunToEnd(o);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->wait_status, 0) << r->out;
  std::vector<std::string> lines = absl::StrSplit(r->out, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 2u) << r->out;
  // Two ranks, disjoint, together covering what this (unbound) test may use.
  std::vector<int> both;
  for (const std::string& line : lines) {
    std::vector<std::string> f = absl::StrSplit(line, ' ');
    ASSERT_EQ(f.size(), 4u) << line;
    for (absl::string_view c : absl::StrSplit(f[3], ',')) both.push_back(std::stoi(std::string(c)));
  }
  std::sort(both.begin(), both.end());
  EXPECT_EQ(both, allowed) << r->out;
}

}  // namespace
}  // namespace dlaunch
