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
#include "agent/placement/local_rank_plan.h"
#include "common/process.h"
#include "gmock/gmock.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"

namespace dlaunch {
namespace {

using ::testing::HasSubstr;

constexpr char kProbeVar[] = "DLAUNCH_PLACEMENT_PROBE";

// Started with DLAUNCH_PLACEMENT_PROBE=<nproc>, this test binary prints its own affinity
// ("affinity A,B") and the plan PlanThisNode makes for that many CPU-only ranks, one "rank R cpus
// A,B" line each, and exits before any test runs: the tests below start it under taskset, as an agent would be started.
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
  std::printf("affinity %s\n", absl::StrJoin(AllowedCpus(), ",").c_str());
  for (const RankSlot& s : *plan) std::printf("rank %d cpus %s\n", s.local_rank, absl::StrJoin(s.cpus, ",").c_str());
  std::fflush(stdout);
  std::_Exit(0);
}();

struct Result {
  int wait_status = -1;
  std::string out;
};

absl::StatusOr<SpawnedProcess> SpawnProcess(const SpawnOptions& options) {
  auto pending = ForkProcess(options);
  if (!pending.ok()) return pending.status();
  return AwaitExec(std::move(*pending));
}

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

// The probe's output: its own affinity and each rank's CPUs.
struct Probe {
  std::vector<int> affinity;
  std::vector<std::vector<int>> ranks;
};

std::vector<int> Ints(absl::string_view list) {
  std::vector<int> out;
  for (absl::string_view c : absl::StrSplit(list, ',', absl::SkipEmpty())) {
    out.push_back(std::stoi(std::string(c)));
  }
  return out;
}

Probe ParseProbe(const std::string& out) {
  Probe p;
  for (absl::string_view line : absl::StrSplit(out, '\n', absl::SkipEmpty())) {
    std::vector<absl::string_view> f = absl::StrSplit(line, ' ');
    if (f.size() == 2 && f[0] == "affinity") p.affinity = Ints(f[1]);
    if (f.size() == 4 && f[0] == "rank") p.ranks.push_back(Ints(f[3]));
  }
  return p;
}

// Disjoint rank CPU sets whose union is `want`.
void ExpectDisjointCover(const Probe& p, const std::vector<int>& want) {
  std::vector<int> all;
  for (const auto& r : p.ranks) {
    EXPECT_FALSE(r.empty());
    all.insert(all.end(), r.begin(), r.end());
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, want);
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
  EXPECT_EQ(r->out, absl::StrCat("affinity ", cpu, "\nrank 0 cpus ", cpu, "\nrank 1 cpus ", cpu, "\n"));
}

TEST(PlacementAffinityTest, AgentBoundByAnMpiLauncherPlansInTheAllocation) {
  const std::vector<int> allowed = AllowedCpus();
  if (allowed.size() < 2) GTEST_SKIP() << "needs two CPUs to tell a binding from the allocation";
  // As if mpirun bound the agent to one CPU: OMPI_COMM_WORLD_SIZE says it is an Open MPI rank.
  SpawnOptions o;
  o.argv = {SelfExe()};
  o.envp = {absl::StrCat(kProbeVar, "=2"), "OMPI_COMM_WORLD_SIZE=1"};
  o.cpu_affinity = {allowed.front()};
  auto r = RunToEnd(o);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->wait_status, 0) << r->out;
  Probe p = ParseProbe(r->out);
  EXPECT_EQ(p.affinity, std::vector<int>{allowed.front()}) << r->out;
  ASSERT_EQ(p.ranks.size(), 2u) << r->out;
  ExpectDisjointCover(p, allowed);
}

// The real launchers, where installed: each binds its one rank to a core (Open MPI's mpirun by
// default, MPICH hydra when asked), and the agent still plans in the whole allocation.
class RealMpiLauncherTest : public ::testing::TestWithParam<std::vector<std::string>> {};

TEST_P(RealMpiLauncherTest, BoundAgentPlansInTheAllocation) {
  const std::vector<int> allowed = AllowedCpus();
  if (allowed.size() < 2) GTEST_SKIP() << "needs two CPUs to tell a binding from the allocation";
  std::vector<std::string> argv = GetParam();
  if (access(("/usr/bin/" + argv[0]).c_str(), X_OK) != 0) GTEST_SKIP() << argv[0] << " not installed";
  argv.push_back(SelfExe());
  SpawnOptions o;
  o.argv = argv;
  // The environment passes through (both launchers hand it to a local rank); Open MPI refuses
  // root without the two ALLOW variables.
  o.envp = {absl::StrCat(kProbeVar, "=2"), "PATH=/usr/bin:/bin", "OMPI_ALLOW_RUN_AS_ROOT=1",
            "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1", "HOME=/tmp"};
  auto r = RunToEnd(o);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->wait_status, 0) << r->out;
  Probe p = ParseProbe(r->out);
  EXPECT_EQ(p.affinity.size(), 1u) << "the launcher did not bind its rank:\n" << r->out;
  ASSERT_EQ(p.ranks.size(), 2u) << r->out;
  ExpectDisjointCover(p, allowed);
}

INSTANTIATE_TEST_SUITE_P(
    Launchers, RealMpiLauncherTest,
    ::testing::Values(std::vector<std::string>{"mpirun.openmpi", "-n", "1"},
                      std::vector<std::string>{"mpiexec.hydra", "-bind-to", "core", "-n", "1"}),
    [](const auto& info) { return info.index == 0 ? "OpenMpiMpirun" : "MpichHydra"; });

}  // namespace
}  // namespace dlaunch
