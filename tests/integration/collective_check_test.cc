// The collective check before round 0 with real local nodes (docs/stragglers.md): the agents
// find each other through the launcher, exchange bytes over TCP in a ring, all-reduce and time a
// matrix multiply; the launcher prints the medians and journals every node's figures. (A node
// made slow, and left out, needs hosts that differ: tests/cluster/slow_node_test.cc.)
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "tests/integration/test_process.h"

namespace dlaunch::testing {
namespace {

using std::chrono::seconds;

const std::string kBin = DLAUNCH_BIN_DIR;

class CollectiveCheckTest : public ::testing::Test {
 protected:
  void SetUp() override { tmp_ = MakeTempDir(); }
  void TearDown() override { std::filesystem::remove_all(tmp_); }

  // Runs a job of `nodes` local nodes printing "ran", with `preflight` as its preflight key.
  int Run(int nodes, const std::string& preflight) {
    const std::string job = tmp_ + "/job.yaml";
    std::ofstream(job) << "name: cc\nnodes: " << nodes
                       << "\ncommand: [python3, -c, \"print('ran')\"]\nlogs: {dir: " << tmp_
                       << "/runs}\npreflight: " << preflight << "\n";
    return Dlaunch({"run", job});
  }

  int Dlaunch(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {kBin + "/dlaunch"};
    argv.insert(argv.end(), args.begin(), args.end());
    ChildProcess p(argv, tmp_);
    std::optional<int> code = p.Wait(seconds(120));
    out_ = p.Stdout() + p.Stderr();
    return code.value_or(-1);
  }

  std::string Events() const {
    for (const auto& entry : std::filesystem::recursive_directory_iterator(tmp_ + "/runs")) {
      if (entry.path().filename() == "events.jsonl") return ReadFile(entry.path().string());
    }
    return "";
  }

  std::string tmp_;
  std::string out_;
};

TEST_F(CollectiveCheckTest, LocalNodesAreMeasuredWhenAskedAndTheirFiguresJournaled) {
  // `collective: on`: by default (auto) nodes of one host are not measured. Nodes sharing this machine's cores differ by its load; a wide share keeps that from naming
  // one, while a node whose exchange failed (figure 0) would still be named.
  ASSERT_EQ(Run(3, "{collective: on, slow_share: \"95%\"}"), 0) << out_;
  EXPECT_TRUE(absl::StrContains(out_, "[dlaunch] collective check: 3 node(s): link median ")) << out_;
  EXPECT_TRUE(absl::StrContains(out_, "GFLOP/s per core (preflight.slow_share 95%")) << out_;
  // `python3 -c`: no script that uses torch, so the agents' own loop measures.
  EXPECT_TRUE(absl::StrContains(out_, "measured with tcp ring, matmul loop)")) << out_;
  EXPECT_FALSE(absl::StrContains(out_, "slow node")) << out_;
  EXPECT_FALSE(absl::StrContains(out_, "all-reduce median 0 kB/s")) << out_;
  EXPECT_TRUE(absl::StrContains(out_, "[rank 2] ran")) << out_;
  const std::string events = Events();
  // Every node's link and compute figures, with its peers' median, in its node_joined event.
  size_t links = 0;
  for (size_t at = 0; (at = events.find("to its ring neighbours: ", at)) != std::string::npos; ++at) {
    ++links;
  }
  EXPECT_EQ(links, 3u) << events;
  EXPECT_TRUE(absl::StrContains(events, "GFLOP/s per core (peers' median")) << events;
}

TEST_F(CollectiveCheckTest, ASingleNodeHasNothingToCompareAndPasses) {
  ASSERT_EQ(Run(1, "{collective: on}"), 0) << out_;
  EXPECT_TRUE(absl::StrContains(
      out_, "collective check: 1 node(s) passed their own checks: nothing to compare"))
      << out_;
  EXPECT_TRUE(absl::StrContains(Events(), "a single node: nothing to compare it with"));
}

TEST_F(CollectiveCheckTest, CollectiveOffMeasuresNothing) {
  ASSERT_EQ(Run(2, "{collective: off}"), 0) << out_;
  EXPECT_FALSE(absl::StrContains(out_, "collective check")) << out_;
  EXPECT_FALSE(absl::StrContains(Events(), "ring neighbours"));
}

TEST_F(CollectiveCheckTest, ByDefaultNodesOfOneHostAreNotMeasured) {
  // auto: agents of one host share its links and cores; their figures would differ only by
  // its load, and none could be left out for them.
  ASSERT_EQ(Run(2, "on"), 0) << out_;
  EXPECT_FALSE(absl::StrContains(out_, "collective check")) << out_;
  EXPECT_FALSE(absl::StrContains(Events(), "ring neighbours"));
  EXPECT_TRUE(absl::StrContains(out_, "[rank 1] ran")) << out_;
}

TEST_F(CollectiveCheckTest, DoctorShowsLinkAndComputeColumns) {
  const std::string job = tmp_ + "/doctor.yaml";
  std::ofstream(job) << "nodes: 2\ncommand: [python3, -c, pass]\npreflight: {collective: on}\n";
  EXPECT_EQ(Dlaunch({"doctor", job, "--job-root", tmp_ + "/runs"}), 0) << out_;
  EXPECT_TRUE(absl::StrContains(out_, "ports  clock  link  compute  TIME")) << out_;
  EXPECT_TRUE(absl::StrContains(out_, "[dlaunch] collective check: 2 node(s)")) << out_;
  EXPECT_TRUE(absl::StrContains(out_, "measured with tcp ring")) << out_;
}

// A script that uses torch, run by an interpreter that has it (Debian's python3 with torch):
// the links are measured by Gloo among the nodes' check processes, through the job's own torch.
class TorchCollectiveCheckTest : public CollectiveCheckTest {
 protected:
  void SetUp() override {
    CollectiveCheckTest::SetUp();
    if (RunCommandOk("/usr/bin/python3 -c 'import torch.distributed' 2>/dev/null") != 0) {
      GTEST_SKIP() << "/usr/bin/python3 has no torch";
    }
    // It names torch (so the check uses it) without the ranks paying for its import.
    std::ofstream(tmp_ + "/train.py") << "if False:\n    import torch\nprint('ran')\n";
  }
  static int RunCommandOk(const std::string& command) { return std::system(command.c_str()); }
  int RunTorch(int nodes, const std::string& preflight) {
    const std::string job = tmp_ + "/job.yaml";
    std::ofstream(job) << "name: cc\nnodes: " << nodes << "\ncommand: [/usr/bin/python3, " << tmp_
                       << "/train.py]\nlogs: {dir: " << tmp_ << "/runs}\npreflight: " << preflight
                       << "\n";
    return Dlaunch({"run", job});
  }
};

TEST_F(TorchCollectiveCheckTest, GlooMeasuresWhereTheJobsPythonHasTorch) {
  // A budget for three `import torch` at once on a machine shared with other work.
  ASSERT_EQ(RunTorch(3, "{collective: on, collective_budget: 90s, slow_share: \"95%\"}"), 0)
      << out_;
  EXPECT_TRUE(absl::StrContains(out_, "measured with gloo (torch), matmul loop)")) << out_;
  EXPECT_FALSE(absl::StrContains(out_, "slow node")) << out_;
  EXPECT_FALSE(absl::StrContains(out_, "all-reduce median 0 kB/s")) << out_;
  EXPECT_FALSE(absl::StrContains(out_, "link median 0 kB/s")) << out_;
  EXPECT_TRUE(absl::StrContains(out_, "[rank 2] ran")) << out_;
}

TEST_F(TorchCollectiveCheckTest, EngineTcpKeepsTheAgentsLoop) {
  ASSERT_EQ(RunTorch(2, "{collective: on, collective_engine: tcp, slow_share: \"95%\"}"), 0)
      << out_;
  EXPECT_TRUE(absl::StrContains(out_, "measured with tcp ring, matmul loop)")) << out_;
}

}  // namespace
}  // namespace dlaunch::testing
