// How many relays a job gets (docs/relays.md): rendezvous.relay_fanout K, or `auto`.
#include "launcher/run/relay_launch.h"

#include <gtest/gtest.h>

namespace dlaunch {
namespace {

TEST(RelayLaunchTest, OneRelayPerFanoutAgentsRoundedUp) {
  EXPECT_EQ(RelayCount(10000, 1250), 8);
  EXPECT_EQ(RelayCount(10001, 1250), 9);
  EXPECT_EQ(RelayCount(4, 2), 2);
  EXPECT_EQ(RelayCount(4, 0), 0) << "no fanout, no relays";
  EXPECT_EQ(RelayCount(1, 8), 0) << "a single agent talks to the launcher";
}

TEST(RelayLaunchTest, AutoStartsRelaysOnlyForLargeJobs) {
  EXPECT_EQ(EffectiveRelayFanout(1999, 0, true), 0);
  EXPECT_EQ(EffectiveRelayFanout(2000, 0, true), kAutoRelayFanout);
  EXPECT_EQ(RelayCount(10000, EffectiveRelayFanout(10000, 0, true)), 8);
  EXPECT_EQ(EffectiveRelayFanout(10000, 64, false), 64) << "a given fanout is kept";
  EXPECT_EQ(EffectiveRelayFanout(10000, 0, false), 0);
}

TEST(RelayLaunchTest, AgentsAreDealtRoundRobin) {
  EXPECT_EQ(RelayOfNode(0, 3), 0);
  EXPECT_EQ(RelayOfNode(4, 3), 1);
  EXPECT_EQ(RelayOfNode(4, 0), -1);
}

}  // namespace
}  // namespace dlaunch
