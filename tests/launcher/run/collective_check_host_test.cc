// CollectiveCheckHost's two calls without the network: the ring in host order once every agent
// asked, a node that failed its own checks left out of the ring, a lone node skipped, and the
// verdicts once every node reported. Nothing here waits: every agent arrives, so no timer fires.
#include "launcher/run/collective_check_host.h"

#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace dlaunch {
namespace {

class CollectiveCheckHostTest : public ::testing::Test {
 protected:
  void Make(int expected, int nodes_min) {
    CollectiveCheckHost::Config config;
    config.plan.set_enabled(true);
    config.plan.set_budget_ms(20000);
    config.plan.set_slow_share(0.2);
    config.expected_agents = expected;
    config.nodes_min = nodes_min;
    host_ = std::make_unique<CollectiveCheckHost>(io_, config,
                                                  [this](const std::string& l) { said_.push_back(l); });
  }
  void Ask(const std::string& host, bool passed = true) {
    v1::CollectiveCheckRequest q;
    q.set_agent_id(host + ":1:ab");
    q.set_host(host);
    q.set_addr("10.0.0." + host.substr(1));
    q.set_port(7000);
    q.set_local_checks_passed(passed);
    host_->HandleCollectiveCheck(q, [this, host](v1::CollectiveCheckResponse r) { placed_[host] = r; });
  }
  void Report(const std::string& host, double bps, double flops) {
    v1::CollectiveCheckRequest q;
    q.set_agent_id(host + ":1:ab");
    q.set_host(host);
    q.set_reporting(true);
    q.mutable_report()->set_to_right_bps(bps);
    q.mutable_report()->set_to_left_bps(bps);
    q.mutable_report()->set_flops_per_core(flops);
    host_->HandleCollectiveCheck(q, [this, host](v1::CollectiveCheckResponse r) { judged_[host] = r; });
  }

  boost::asio::io_context io_;
  std::unique_ptr<CollectiveCheckHost> host_;
  std::vector<std::string> said_;
  std::map<std::string, v1::CollectiveCheckResponse> placed_, judged_;
};

TEST_F(CollectiveCheckHostTest, TheRingIsInHostOrderOnceEveryAgentAsked) {
  Make(4, 1);
  Ask("h3");
  Ask("h1");
  Ask("h4", /*passed=*/false);
  EXPECT_TRUE(placed_.empty());  // one agent has not asked yet
  Ask("h2");
  ASSERT_EQ(placed_.size(), 4u);
  EXPECT_TRUE(absl::StrContains(placed_["h4"].skipped(), "its own checks failed"));
  ASSERT_EQ(placed_["h1"].ring_size(), 3);
  EXPECT_EQ(placed_["h1"].ring(0).host(), "h1");
  EXPECT_EQ(placed_["h1"].ring(2).host(), "h3");
  EXPECT_EQ(placed_["h1"].ring(2).addr(), "10.0.0.3");
  EXPECT_EQ(placed_["h2"].index(), 1);
  EXPECT_EQ(placed_["h3"].index(), 2);
  // The verdict waits for every node of the ring.
  Report("h1", 1e9, 5e9);
  Report("h2", 1e9, 5e9);
  EXPECT_TRUE(judged_.empty());
  Report("h3", 1e9, 1e9);
  ASSERT_EQ(judged_.size(), 3u);
  ASSERT_EQ(judged_["h3"].checks_size(), 2);
  EXPECT_EQ(judged_["h3"].checks(1).name(), "compute");
  EXPECT_EQ(judged_["h3"].checks(1).verdict(), v1::CheckResult::FAILED);
  EXPECT_EQ(judged_["h1"].checks(1).verdict(), v1::CheckResult::PASSED);
  ASSERT_EQ(said_.size(), 2u);
  EXPECT_TRUE(absl::StartsWith(said_[1], "slow node: h3: compute 1.00 GFLOP/s")) << said_[1];
}

TEST_F(CollectiveCheckHostTest, ALoneNodeHasNothingToCompare) {
  Make(2, 1);
  Ask("h1");
  Ask("h2", /*passed=*/false);
  EXPECT_TRUE(absl::StrContains(placed_["h1"].skipped(), "a single node: nothing to compare"));
  EXPECT_EQ(said_, (std::vector<std::string>{
                       "collective check: 1 node(s) passed their own checks: nothing to compare"}));
}

TEST_F(CollectiveCheckHostTest, AnAgentAfterTheRingClosedIsSkipped) {
  Make(2, 1);
  Ask("h1");
  Ask("h2");
  Ask("h9");
  EXPECT_TRUE(absl::StrContains(placed_["h9"].skipped(), "had begun without this node"));
}

TEST_F(CollectiveCheckHostTest, ShutdownAnswersEveryWaitingCall) {
  Make(3, 1);
  Ask("h1");
  host_->ShutdownCollectiveCheck();
  EXPECT_EQ(placed_["h1"].skipped(), "the launcher is stopping");
}

}  // namespace
}  // namespace dlaunch
