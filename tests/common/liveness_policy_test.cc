// LivenessPolicy: the one liveness rule, from the heartbeat interval and the misses allowed.
#include "common/liveness_policy.h"

#include "gtest/gtest.h"

namespace dlaunch {
namespace {

using std::chrono::milliseconds;

TEST(LivenessPolicyTest, ANodeIsLostAfterTheMissesAndSilentAfterTwoHeartbeats) {
  const LivenessPolicy p(milliseconds(2000), 3);
  EXPECT_EQ(p.lost_after(), milliseconds(6000));
  EXPECT_EQ(p.silent_after(), milliseconds(4000));
  const LivenessPolicy one_miss(milliseconds(2000), 1);
  EXPECT_EQ(one_miss.silent_after(), milliseconds(2000)) << "never silent later than lost";
}

TEST(LivenessPolicyTest, TheLeaseIsTheLossLimitAndAMarginButNeverUnderTheFloors) {
  // 1 s x 3: the node is lost after 3 s, its agent fenced half a second later.
  EXPECT_EQ(LivenessPolicy(milliseconds(1000), 3).lease(), milliseconds(3500));
  EXPECT_EQ(LivenessPolicy(milliseconds(2000), 5).lease(), milliseconds(10500));
  // Short heartbeats: the floor, so a launcher late by a second fences nothing.
  EXPECT_EQ(LivenessPolicy(milliseconds(250), 3).lease(), LivenessPolicy::kMinLease);
  // One miss: a healthy agent's newest echo may be a heartbeat and a ping old; the lease leaves
  // a second beyond that.
  EXPECT_EQ(LivenessPolicy(milliseconds(4000), 1).lease(), milliseconds(4000 + 1000 + 1000));
  for (int hb : {50, 250, 1000, 2000, 10000}) {
    for (int misses : {1, 2, 3, 5}) {
      const LivenessPolicy p(milliseconds(hb), misses);
      EXPECT_GT(p.lease(), p.lost_after()) << hb << " x " << misses;
      EXPECT_GE(p.lease(), p.heartbeat() + p.ping_interval() + LivenessPolicy::kLeaseSlack)
          << hb << " x " << misses;
    }
  }
}

TEST(LivenessPolicyTest, TheLeaseGrowsWithTheJobsSizeAndTheAgentTakesTheLaunchersLease) {
  // A launcher's loop was seen 3.1 s late at 10,000 agents: the lease keeps that and more.
  const LivenessPolicy big(milliseconds(1000), 3, 10000);
  EXPECT_EQ(big.lease(), milliseconds(3000 + 500 + 3000));
  EXPECT_EQ(LivenessPolicy(milliseconds(1000), 3, 16).lease(), milliseconds(3504));
  // The agent does not know the job's size: it takes the launcher's number when it comes.
  const LivenessPolicy agent = LivenessPolicy(milliseconds(1000), 3).WithLease(big.lease());
  EXPECT_EQ(agent.lease(), big.lease());
  EXPECT_EQ(agent.workers_gone_after(), big.workers_gone_after());
  EXPECT_EQ(LivenessPolicy(milliseconds(1000), 3).WithLease(milliseconds(0)).lease(),
            milliseconds(3500))
      << "none given: derived";
}

TEST(LivenessPolicyTest, PingsComeEachHeartbeatAndAtLeastOnceASecond) {
  EXPECT_EQ(LivenessPolicy(milliseconds(250), 3).ping_interval(), milliseconds(250));
  EXPECT_EQ(LivenessPolicy(milliseconds(5000), 3).ping_interval(), milliseconds(1000));
}

TEST(LivenessPolicyTest, WorkersAreGoneALeaseACheckAndAKillAfterTheLastWord) {
  // No stop grace: a fenced agent SIGKILLs its workers.
  const LivenessPolicy p(milliseconds(1000), 3);
  EXPECT_EQ(p.workers_gone_after(),
            milliseconds(3500) + LivenessPolicy::kLeaseCheckSlack + LivenessPolicy::kKillSlack);
  // The agent checks no later than its next heartbeat, whichever is sooner.
  const LivenessPolicy fast(milliseconds(100), 3);
  EXPECT_EQ(fast.lease_check_slack(), milliseconds(100));
  // At 1 s x 3, the next round can start within 1.5 s of the loss (named 3 s after the last word).
  EXPECT_LE(p.workers_gone_after() - p.lost_after(), milliseconds(1500));
}

TEST(LivenessPolicyTest, NonsenseInputsGetTheFloors) {
  const LivenessPolicy p(milliseconds(0), 0);
  EXPECT_EQ(p.heartbeat(), LivenessPolicy::kMinHeartbeat);
  EXPECT_EQ(p.misses(), LivenessPolicy::kDefaultMisses);
}

}  // namespace
}  // namespace dlaunch
