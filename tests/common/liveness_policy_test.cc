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

TEST(LivenessPolicyTest, TheLeaseIsTheLossLimitButNeverUnderTheFloor) {
  EXPECT_EQ(LivenessPolicy(milliseconds(1000), 3).lease(), LivenessPolicy::kMinLease);
  EXPECT_EQ(LivenessPolicy(milliseconds(2000), 5).lease(), milliseconds(10000));
  EXPECT_GE(LivenessPolicy(milliseconds(250), 3).lease(),
            LivenessPolicy(milliseconds(250), 3).lost_after());
}

TEST(LivenessPolicyTest, PingsComeEachHeartbeatAndAtLeastOnceASecond) {
  EXPECT_EQ(LivenessPolicy(milliseconds(250), 3).ping_interval(), milliseconds(250));
  EXPECT_EQ(LivenessPolicy(milliseconds(5000), 3).ping_interval(), milliseconds(1000));
}

TEST(LivenessPolicyTest, WorkersAreGoneALeaseACheckAGraceAndAKillAfterTheLastWord) {
  const LivenessPolicy p(milliseconds(1000), 3);
  EXPECT_EQ(p.workers_gone_after(milliseconds(2000)),
            milliseconds(5000 + 1000 + 2000) + LivenessPolicy::kKillSlack);
  EXPECT_EQ(p.workers_gone_after(milliseconds(-5)), p.workers_gone_after(milliseconds(0)));
}

TEST(LivenessPolicyTest, NonsenseInputsGetTheFloors) {
  const LivenessPolicy p(milliseconds(0), 0);
  EXPECT_EQ(p.heartbeat(), LivenessPolicy::kMinHeartbeat);
  EXPECT_EQ(p.misses(), LivenessPolicy::kDefaultMisses);
}

}  // namespace
}  // namespace dlaunch
