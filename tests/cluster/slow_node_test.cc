// The collective check before round 0 on namespace hosts (docs/stragglers.md): one host made
// slow, its link with tc netem (rate and delay on its outgoing traffic) or its CPU with a
// cgroup's CFS quota (cpu.max, or cpu.cfs_quota_us on cgroup v1). The preflight names it with its
// figures; with `nodes: "2:3"` it is left out and the job runs on the other two hosts; with
// `nodes: 3` it is named and kept. A clean cluster names nobody. The share is 65%, not the
// default 20%: see RunShortJob.
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "fault_cluster.h"
#include "gtest/gtest.h"

namespace dlaunch {
namespace testing {
namespace {

class SlowNodeTest : public FaultClusterTest {
 protected:
  // Runs a short job of the fault worker with `nodes`; its exit code.
  int RunShortJob(const std::string& name, const std::string& nodes) {
    FaultJobOptions options;
    options.nodes = nodes;
    // On the 2-core test machine under load, a clean cluster's link figures were seen up to 57%
    // below their peers' median (the veth's bytes are copied by busy CPUs); the slowed host's
    // were 73-96% below. docs/stragglers.md, "Limits".
    options.preflight = "{slow_share: 65%}";
    pid_t launcher = StartJob(name, {"--round0-steps", "5", "--step-time", "0.05"}, options);
    EXPECT_GT(launcher, 0);
    return launcher > 0 ? WaitJobEnd(launcher) : -1;
  }

  // h1 was made slow: the terminal and the journal name it, with its `check` figure; with
  // "2:3" it is left out and h2 and h3 run the job.
  void ExpectNamed(const std::string& check, const std::string& nodes, int code) {
    const std::string out = LauncherOutput();
    const std::string events = ReadJobFile("events.jsonl");
    EXPECT_EQ(code, 0) << out;
    // "slow node: h1: link ...; compute ...": the slowed figure is among h1's (a CPU quota
    // slows its sending too).
    const size_t named = out.find("slow node: h1: ");
    ASSERT_NE(named, std::string::npos) << out;
    const std::string line = out.substr(named, out.find('\n', named) - named);
    EXPECT_TRUE(absl::StrContains(line, check + " ")) << line;
    EXPECT_TRUE(absl::StrContains(line, "below the median of its peers")) << line;
    EXPECT_FALSE(absl::StrContains(out, "slow node: h2")) << out;
    EXPECT_FALSE(absl::StrContains(out, "slow node: h3")) << out;
    if (nodes == "2:3") {
      EXPECT_TRUE(absl::StrContains(out, "node left out: h1")) << out;
      EXPECT_TRUE(absl::StrContains(events, "\"node_unfit\"")) << events;
      EXPECT_TRUE(absl::StrContains(out, "2 node(s), world size 4")) << out;
      EXPECT_TRUE(absl::StrContains(out, absl::StrCat("MASTER_ADDR=", cluster_->HostIp("h2"))))
          << out;
    } else {
      EXPECT_TRUE(absl::StrContains(out, "kept: nodes.min (3) needs it")) << out;
      EXPECT_FALSE(absl::StrContains(events, "\"node_unfit\"")) << events;
      EXPECT_TRUE(absl::StrContains(out, "3 node(s), world size 6")) << out;
    }
    // The figures are journaled with the node's checks.
    EXPECT_TRUE(absl::StrContains(events, "below the median of its peers")) << events;
    ExpectNothingLeft();
  }
};

TEST_F(SlowNodeTest, SlowLinkIsNamedAndLeftOut) {
  RunResult r = cluster_->Tool({"slow-link", "h1", "40mbit", "5ms"},
                               absl::Seconds(10));
  ASSERT_TRUE(r.ok()) << r.output;
  std::cout << r.output;  // netem, or tbf where the kernel has no netem
  ExpectNamed("link", "2:3", RunShortJob("slowlink", "2:3"));
}

TEST_F(SlowNodeTest, SlowCpuIsNamedAndLeftOut) {
  RunResult r = cluster_->Tool({"slow-cpu", "h1", "1"}, absl::Seconds(10));
  ASSERT_TRUE(r.ok()) << r.output;
  ExpectNamed("compute", "2:3", RunShortJob("slowcpu", "2:3"));
}

TEST_F(SlowNodeTest, SlowNodeNodesMinNeedsIsNamedAndKept) {
  FAULT_SUITE_FULL_ONLY();
  RunResult r = cluster_->Tool({"slow-cpu", "h1", "1"}, absl::Seconds(10));
  ASSERT_TRUE(r.ok()) << r.output;
  ExpectNamed("compute", "3", RunShortJob("slowkept", "3"));
}

TEST_F(SlowNodeTest, CleanClusterNamesNobody) {
  const int code = RunShortJob("clean", "2:3");
  const std::string out = LauncherOutput();
  EXPECT_EQ(code, 0) << out;
  EXPECT_TRUE(absl::StrContains(out, "collective check: 3 node(s)")) << out;
  EXPECT_FALSE(absl::StrContains(out, "slow node")) << out;
  EXPECT_TRUE(absl::StrContains(out, "3 node(s), world size 6")) << out;
}

}  // namespace
}  // namespace testing
}  // namespace dlaunch
