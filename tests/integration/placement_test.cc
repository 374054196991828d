// Placement end to end: the agent started by a real node launcher (Open MPI's mpirun, MPICH's
// hydra, none) pins each worker to its own CPUs, and never to CPUs the agent was not given.
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "tests/integration/test_process.h"

namespace dlaunch::testing {
namespace {

using std::chrono::seconds;

const std::string kBin = DLAUNCH_BIN_DIR;

// Each worker writes "<Cpus_allowed_list>;<DLAUNCH_CPUS>" to <job dir>/cpus-<rank>.
const char* kWorkerScript =
    "printf '%s;%s\\n' \"$(grep Cpus_allowed_list /proc/self/status | cut -f2)\" "
    "\"$DLAUNCH_CPUS\" > \"$DLAUNCH_JOB_DIR/cpus-$RANK\"";

std::set<int> ParseCpuList(absl::string_view text) {
  std::set<int> cpus;
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    std::pair<absl::string_view, absl::string_view> ends = absl::StrSplit(item, '-');
    int first = -1;
    int last = -1;
    EXPECT_TRUE(absl::SimpleAtoi(ends.first, &first)) << text;
    if (ends.second.empty()) last = first;
    else EXPECT_TRUE(absl::SimpleAtoi(ends.second, &last)) << text;
    for (int c = first; c <= last && first >= 0; ++c) cpus.insert(c);
  }
  return cpus;
}

std::set<int> OwnCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::set<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.insert(c);
  }
  return cpus;
}

// The first of `names` on PATH, or "".
std::string FindProgram(const std::vector<std::string>& names) {
  const char* path = getenv("PATH");
  for (const std::string& name : names) {
    for (absl::string_view dir : absl::StrSplit(path ? path : "", ':', absl::SkipEmpty())) {
      std::string full = absl::StrCat(dir, "/", name);
      if (access(full.c_str(), X_OK) == 0) return full;
    }
  }
  return "";
}

struct RankCpus {
  std::set<int> allowed;  // what the kernel says the worker may run on
  std::set<int> exported; // DLAUNCH_CPUS
};

class PlacementTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_ = MakeTempDir();
    job_dir_ = tmp_ + "/" + tmp_.substr(tmp_.rfind('/') + 1);
  }

  // `prefix` (e.g. taskset) runs dlaunch; `flags` go before `--`. Waits for the end and expects
  // success; returns each rank's CPUs.
  std::vector<RankCpus> Run(int nproc, const std::vector<std::string>& prefix,
                            const std::vector<std::string>& flags,
                            const std::vector<std::string>& env = {}) {
    std::vector<std::string> argv = prefix;
    argv.insert(argv.end(), {kBin + "/dlaunch", "run"});
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.insert(argv.end(), {"--nnodes", "1", "--nproc-per-node", std::to_string(nproc),
                             "--job-dir", job_dir_, "--heartbeat", "1", "--grace", "2", "--",
                             "/bin/sh", "-c", kWorkerScript});
    ChildProcess run(argv, tmp_, env);
    auto code = run.Wait(seconds(90));
    EXPECT_TRUE(code.has_value()) << "dlaunch run did not finish";
    if (!code.has_value()) run.Signal(SIGKILL);
    EXPECT_EQ(code.value_or(-1), 0) << run.Stdout() << run.Stderr();
    stderr_ = run.Stderr();
    std::vector<RankCpus> ranks;
    for (int rank = 0; rank < nproc; ++rank) {
      std::string line(absl::StripTrailingAsciiWhitespace(
          ReadFile(absl::StrCat(job_dir_, "/cpus-", rank))));
      std::pair<std::string, std::string> parts = absl::StrSplit(line, ';');
      ranks.push_back({ParseCpuList(parts.first), ParseCpuList(parts.second)});
    }
    return ranks;
  }

  // Non-empty, pairwise disjoint, what DLAUNCH_CPUS says, and together exactly `node`.
  void ExpectDisjointCover(const std::vector<RankCpus>& ranks, const std::set<int>& node) {
    std::set<int> all;
    for (size_t r = 0; r < ranks.size(); ++r) {
      SCOPED_TRACE(absl::StrCat("rank ", r));
      EXPECT_FALSE(ranks[r].allowed.empty());
      EXPECT_EQ(ranks[r].allowed, ranks[r].exported);
      for (int cpu : ranks[r].allowed) {
        EXPECT_TRUE(all.insert(cpu).second) << "CPU " << cpu << " is given to two ranks";
      }
    }
    EXPECT_EQ(all, node) << stderr_;
  }

  std::string tmp_, job_dir_, stderr_;
};

// Open MPI binds a lone rank per node to one core by default; ThetaGPU's script starts the agent
// so. Without --bind-to none in the command, the agent still plans on the whole node.
TEST_F(PlacementTest, AgentUnderOpenMpiMpirunGivesEachWorkerItsOwnCpus) {
  const std::string mpirun = FindProgram({"mpirun.openmpi", "mpirun"});
  if (mpirun.empty()) GTEST_SKIP() << "Open MPI's mpirun is not installed";
  const std::set<int> node = OwnCpus();
  const int nproc = std::min<int>(static_cast<int>(node.size()), 4);
  if (nproc < 2) GTEST_SKIP() << "needs 2 CPUs";
  auto ranks = Run(nproc, {},
                   {"--launcher", "mpirun", "--launcher-cmd",
                    mpirun + " -n 1 -npernode 1"},
                   {"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"});
  if (nproc == static_cast<int>(node.size())) ExpectDisjointCover(ranks, node);
  // The plan is kept in the job directory, one line per rank.
  const std::string kept = ReadFile(job_dir_ + "/placement/node-0.txt");
  for (int rank = 0; rank < nproc; ++rank) {
    EXPECT_NE(kept.find(absl::StrCat("rank ", rank, " local_rank ", rank, ": ")),
              std::string::npos)
        << kept;
  }
}

TEST_F(PlacementTest, AgentUnderMpichHydraGivesEachWorkerItsOwnCpus) {
  const std::string hydra = FindProgram({"mpiexec.hydra"});
  if (hydra.empty()) GTEST_SKIP() << "MPICH's mpiexec.hydra is not installed";
  const std::set<int> node = OwnCpus();
  if (node.size() < 2) GTEST_SKIP() << "needs 2 CPUs";
  const int nproc = static_cast<int>(node.size());
  // -bind-to core: the agent starts bound to one core, as a site default might bind it.
  auto ranks = Run(nproc, {},
                   {"--launcher", "mpiexec", "--launcher-cmd", hydra + " -bind-to core -n 1"});
  ExpectDisjointCover(ranks, node);
}

// A restriction someone chose (taskset, a container's cpuset) is kept: both workers stay inside.
TEST_F(PlacementTest, CpuRestrictedRunKeepsWorkersInside) {
  const std::set<int> node = OwnCpus();
  const int cpu = *node.begin();
  const std::string taskset = FindProgram({"taskset"});
  if (taskset.empty()) GTEST_SKIP() << "taskset is not installed";
  auto ranks = Run(2, {taskset, "-c", std::to_string(cpu)}, {});
  for (size_t r = 0; r < ranks.size(); ++r) {
    SCOPED_TRACE(absl::StrCat("rank ", r));
    EXPECT_EQ(ranks[r].allowed, std::set<int>{cpu});
    EXPECT_EQ(ranks[r].exported, std::set<int>{cpu});
  }
}

// job.yaml's cpus.map is applied as given; a CPU the node lacks fails the job naming the node.
TEST_F(PlacementTest, ExplicitMapIsAppliedAndAnImpossibleOneFailsTheJob) {
  const std::set<int> node = OwnCpus();
  if (node.size() < 2) GTEST_SKIP() << "needs 2 CPUs";
  const int a = *node.begin();
  const int b = *std::next(node.begin());
  const std::string yaml = tmp_ + "/job.yaml";
  std::ofstream(yaml) << "command: [/bin/true]\ncpus:\n  map: [\"" << b << "\", \"" << a << "\"]\n";
  auto ranks = Run(2, {}, {yaml});
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_EQ(ranks[0].allowed, std::set<int>{b});
  EXPECT_EQ(ranks[1].allowed, std::set<int>{a});

  std::ofstream(yaml) << "command: [/bin/true]\ncpus:\n  map: [\"" << a << "\", \"4095\"]\n";
  ChildProcess bad({kBin + "/dlaunch", "run", yaml, "--nnodes", "1", "--nproc-per-node", "2",
                    "--job-dir", job_dir_ + "-bad", "--", "/bin/true"},
                   tmp_);
  auto code = bad.Wait(seconds(60));
  ASSERT_TRUE(code.has_value());
  EXPECT_NE(*code, 0);
  EXPECT_NE(bad.Stderr().find("names CPU 4095 (local rank 1), which this node does not have"),
            std::string::npos)
      << bad.Stderr();
}

// cpus.binding: none pins nothing: workers run on whatever the agent may.
TEST_F(PlacementTest, BindingNoneLeavesWorkersOnTheAgentsCpus) {
  const std::string yaml = tmp_ + "/job.yaml";
  std::ofstream(yaml) << "command: [/bin/true]\ncpus: {binding: none}\n";
  auto ranks = Run(2, {}, {yaml});
  for (size_t r = 0; r < ranks.size(); ++r) {
    SCOPED_TRACE(absl::StrCat("rank ", r));
    EXPECT_EQ(ranks[r].allowed, OwnCpus());
    EXPECT_TRUE(ranks[r].exported.empty());
  }
}

}  // namespace
}  // namespace dlaunch::testing
