// The collective check's verdict: medians, the share, ties, two nodes, link attribution, and
// whether slow nodes are left out or kept for nodes.min.
#include "launcher/job/collective_verdict.h"

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace dlaunch {
namespace {

constexpr double kGB = 1e9;

CollectiveNode Node(const std::string& host, double right, double left, double gflops) {
  CollectiveNode n;
  n.host = host;
  n.reported = true;
  n.figures.set_to_right_bps(right * kGB);
  n.figures.set_to_left_bps(left * kGB);
  n.figures.set_flops_per_core(gflops * 1e9);
  n.figures.set_allreduce_bps(0.5 * kGB);
  return n;
}

// Every node sends `rate` both ways and computes `gflops`.
std::vector<CollectiveNode> Even(int n, double rate = 1.0, double gflops = 10) {
  std::vector<CollectiveNode> nodes;
  for (int i = 0; i < n; ++i) nodes.push_back(Node("h" + std::to_string(i), rate, rate, gflops));
  return nodes;
}

v1::CheckResult::Verdict VerdictOf(const CollectiveVerdict& v, int node, int check) {
  return v.checks[node][check].verdict();
}

TEST(CollectiveVerdictTest, MedianOfOddAndEvenCounts) {
  EXPECT_EQ(Median({}), 0);
  EXPECT_EQ(Median({3}), 3);
  EXPECT_EQ(Median({5, 1, 3}), 3);
  EXPECT_EQ(Median({4, 1, 3, 2}), 2.5);
}

TEST(CollectiveVerdictTest, ShareIsAgainstThePeersMedian) {
  // Peers' median 10: 8.0 is exactly 20% below (not more), 7.9 is more.
  EXPECT_EQ(SlowAgainstPeers({10, 10, 10, 8.0}, 0.2), (std::vector<bool>{false, false, false, false}));
  EXPECT_EQ(SlowAgainstPeers({10, 10, 10, 7.9}, 0.2), (std::vector<bool>{false, false, false, true}));
  // A wider share lets it pass.
  EXPECT_EQ(SlowAgainstPeers({10, 10, 10, 7.9}, 0.3), (std::vector<bool>{false, false, false, false}));
}

TEST(CollectiveVerdictTest, TiesAreNeverSlow) {
  EXPECT_EQ(SlowAgainstPeers({5, 5, 5, 5}, 0.2), (std::vector<bool>(4, false)));
  // All zero (nobody measured anything): no median to fall below.
  EXPECT_EQ(SlowAgainstPeers({0, 0, 0}, 0.2), (std::vector<bool>(3, false)));
}

TEST(CollectiveVerdictTest, TwoNodesCompareTheSlowerWithTheBetterOne) {
  EXPECT_EQ(SlowAgainstPeers({10, 5}, 0.2), (std::vector<bool>{false, true}));
  EXPECT_EQ(SlowAgainstPeers({10, 9}, 0.2), (std::vector<bool>{false, false}));
  EXPECT_EQ(SlowAgainstPeers({10}, 0.2), (std::vector<bool>{false}));
}

TEST(CollectiveVerdictTest, ASlowLinkIsBlamedOnTheNodeSlowOnBothSidesNotOnItsNeighbours) {
  // h2's sends are slow (to h1 and h3): its two links are slow, h1's and h3's other links not.
  std::vector<CollectiveNode> nodes = Even(5);
  nodes[2].figures.set_to_right_bps(0.1 * kGB);
  nodes[2].figures.set_to_left_bps(0.1 * kGB);
  const std::vector<double> links = LinkFigures(nodes);
  EXPECT_DOUBLE_EQ(links[2], 0.1 * kGB);
  EXPECT_DOUBLE_EQ(links[1], 1.0 * kGB);
  EXPECT_DOUBLE_EQ(links[3], 1.0 * kGB);
  // Slow receiving (what the neighbours sent to h2 was slow) blames h2 too.
  nodes = Even(5);
  nodes[1].figures.set_to_right_bps(0.1 * kGB);
  nodes[3].figures.set_to_left_bps(0.1 * kGB);
  EXPECT_EQ(SlowAgainstPeers(LinkFigures(nodes), 0.2),
            (std::vector<bool>{false, false, true, false, false}));
}

TEST(CollectiveVerdictTest, TwoNodesBlameTheOneWhoseSendsAreSlow) {
  std::vector<CollectiveNode> nodes = Even(2);
  nodes[1].figures.set_to_right_bps(0.2 * kGB);
  nodes[1].figures.set_to_left_bps(0.2 * kGB);
  const CollectiveVerdict v = JudgeCollective(nodes, 0.2, 1);
  EXPECT_EQ(v.slow, (std::vector<int>{1}));
  EXPECT_TRUE(v.left_out);
  EXPECT_EQ(VerdictOf(v, 1, 0), v1::CheckResult::FAILED);
  EXPECT_EQ(VerdictOf(v, 0, 0), v1::CheckResult::PASSED);
}

TEST(CollectiveVerdictTest, ASlowNodeIsNamedWithItsFiguresAndLeftOutWhenNodesMinAllows) {
  std::vector<CollectiveNode> nodes = Even(3);
  nodes[0].figures.set_flops_per_core(2e9);  // 80% below 10 GFLOP/s
  const CollectiveVerdict v = JudgeCollective(nodes, 0.2, 2);
  ASSERT_EQ(v.slow, (std::vector<int>{0}));
  EXPECT_TRUE(v.left_out);
  EXPECT_EQ(VerdictOf(v, 0, 1), v1::CheckResult::FAILED);
  EXPECT_EQ(VerdictOf(v, 0, 0), v1::CheckResult::PASSED);  // its link is fine
  EXPECT_EQ(v.checks[0][1].name(), "compute");
  EXPECT_EQ(v.checks[0][1].detail(),
            "2.00 GFLOP/s per core, 80% below the median of its peers (10.00 GFLOP/s per core)");
  ASSERT_EQ(v.lines.size(), 2u);
  EXPECT_TRUE(absl::StrContains(v.lines[0], "compute median 10.00 GFLOP/s per core")) << v.lines[0];
  EXPECT_EQ(v.lines[1],
            "slow node: h0: compute 2.00 GFLOP/s per core, 80% below the median of its peers "
            "(10.00 GFLOP/s per core); left out");
}

TEST(CollectiveVerdictTest, ASlowNodeNodesMinNeedsIsKeptAndStillNamed) {
  std::vector<CollectiveNode> nodes = Even(3);
  nodes[0].figures.set_flops_per_core(2e9);
  const CollectiveVerdict v = JudgeCollective(nodes, 0.2, 3);
  EXPECT_EQ(v.slow, (std::vector<int>{0}));
  EXPECT_FALSE(v.left_out);
  EXPECT_EQ(VerdictOf(v, 0, 1), v1::CheckResult::PASSED);
  EXPECT_TRUE(absl::StartsWith(v.checks[0][1].detail(), "slow, kept: nodes.min (3) needs it: "))
      << v.checks[0][1].detail();
  EXPECT_TRUE(absl::EndsWith(v.lines[1], "; kept: nodes.min (3) needs it")) << v.lines[1];
}

TEST(CollectiveVerdictTest, NodesOfOneHostAreNamedButNeverLeftOut) {
  std::vector<CollectiveNode> nodes = Even(3);
  nodes[0].figures.set_flops_per_core(2e9);
  const CollectiveVerdict v = JudgeCollective(nodes, 0.2, 1, /*one_host=*/true);
  EXPECT_EQ(v.slow, (std::vector<int>{0}));
  EXPECT_FALSE(v.left_out);
  EXPECT_EQ(VerdictOf(v, 0, 1), v1::CheckResult::PASSED);
  EXPECT_TRUE(absl::EndsWith(v.lines[1], "kept: the nodes share one host, whose load is what their "
                                         "figures differ by"))
      << v.lines[1];
}

TEST(CollectiveVerdictTest, ANodeWithoutFiguresIsSlow) {
  std::vector<CollectiveNode> nodes = Even(4);
  nodes[3].reported = false;
  const CollectiveVerdict v = JudgeCollective(nodes, 0.2, 1);
  EXPECT_EQ(v.slow, (std::vector<int>{3}));
  EXPECT_TRUE(absl::StrContains(v.checks[3][0].detail(), "no figures within")) << v.checks[3][0].detail();
}

TEST(CollectiveVerdictTest, AnEvenClusterHasNoSlowNode) {
  const CollectiveVerdict v = JudgeCollective(Even(8), 0.2, 1);
  EXPECT_TRUE(v.slow.empty());
  EXPECT_FALSE(v.left_out);
  EXPECT_EQ(v.lines.size(), 1u);
  for (const auto& checks : v.checks) {
    for (const auto& c : checks) EXPECT_EQ(c.verdict(), v1::CheckResult::PASSED) << c.detail();
  }
}

TEST(CollectiveVerdictTest, EachNodeIsAgainstTheMedianOfTheOthersAtScale) {
  // The sorted shortcut against the definition: the median of every other figure.
  std::vector<double> figures;
  for (int i = 0; i < 1001; ++i) figures.push_back(static_cast<double>((i * 7919) % 997) + (i % 3));
  figures[17] = 0;
  figures[500] = figures[501];  // a tie
  const std::vector<bool> slow = SlowAgainstPeers(figures, 0.2);
  for (size_t i = 0; i < figures.size(); ++i) {
    std::vector<double> others = figures;
    others.erase(others.begin() + static_cast<long>(i));
    const double median = Median(others);
    EXPECT_EQ(slow[i], median > 0 && figures[i] < 0.8 * median) << i;
  }
  EXPECT_TRUE(slow[17]);
}

TEST(CollectiveVerdictTest, RatesForTheTerminal) {
  EXPECT_EQ(FormatRate(1.234e9), "1.23 GB/s");
  EXPECT_EQ(FormatRate(83.4e6), "83.4 MB/s");
  EXPECT_EQ(FormatRate(5e3), "5 kB/s");
}

TEST(CollectiveVerdictTest, TheEngineIsWhatEveryNodeCanUse) {
  EXPECT_EQ(CommonEngine({"nccl", "nccl"}), "nccl");
  EXPECT_EQ(CommonEngine({"nccl", "gloo"}), "gloo");
  EXPECT_EQ(CommonEngine({"gloo", "gloo", "gloo"}), "gloo");
  EXPECT_EQ(CommonEngine({"gloo", ""}), "tcp");
  EXPECT_EQ(CommonEngine({}), "tcp");
}

TEST(CollectiveVerdictTest, TheLineSaysWhatMeasured) {
  std::vector<CollectiveNode> nodes = Even(3);
  for (CollectiveNode& n : nodes) n.figures.set_method("gloo (torch), matmul loop");
  const CollectiveVerdict v = JudgeCollective(nodes, 0.2, 1);
  EXPECT_TRUE(absl::StrContains(v.lines[0], "measured with gloo (torch), matmul loop)")) << v.lines[0];
}

TEST(CollectiveVerdictTest, TheGpusAllReduceIsJudgedWhenEveryNodeMeasuredIt) {
  std::vector<CollectiveNode> nodes = Even(4);
  for (CollectiveNode& n : nodes) n.figures.set_gpu_busbw_bps(230 * kGB);
  nodes[2].figures.set_gpu_busbw_bps(90 * kGB);  // its GPUs' link is degraded
  CollectiveVerdict v = JudgeCollective(nodes, 0.2, 1);
  ASSERT_EQ(v.slow, std::vector<int>{2});
  EXPECT_EQ(VerdictOf(v, 2, 0), v1::CheckResult::FAILED);
  EXPECT_TRUE(absl::StrContains(v.checks[2][0].detail(), "GPUs' all-reduce")) << v.checks[2][0].detail();
  EXPECT_TRUE(absl::StrContains(v.lines[0], "GPUs' all-reduce median")) << v.lines[0];
  // A node without all_reduce_perf: nobody is judged on it.
  nodes[1].figures.set_gpu_busbw_bps(0);
  v = JudgeCollective(nodes, 0.2, 1);
  EXPECT_TRUE(v.slow.empty());
  EXPECT_FALSE(absl::StrContains(v.lines[0], "GPUs'")) << v.lines[0];
}

}  // namespace
}  // namespace dlaunch
