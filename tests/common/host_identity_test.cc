#include "common/host_identity.h"

#include "common/environment.h"
#include "gtest/gtest.h"

namespace dlaunch {
namespace {

TEST(ShortHostNameTest, NamesCompareByFirstLabelCaseInsensitively) {
  EXPECT_EQ(ShortHostName("x3005c0s13b0n0.hsn.cm.polaris.alcf.anl.gov"), "x3005c0s13b0n0");
  EXPECT_EQ(ShortHostName("Node01.Cluster"), "node01");
  EXPECT_EQ(ShortHostName("node01"), "node01");
}

TEST(ShortHostNameTest, AddressesAreNotCutAtTheFirstDot) {
  EXPECT_EQ(ShortHostName("10.0.0.2"), "10.0.0.2");
  EXPECT_EQ(ShortHostName("FE80::1"), "fe80::1");
}

TEST(FreePortTest, ReturnsABindablePortOnLoopback) {
  int port = FreePort("127.0.0.1");
  EXPECT_GT(port, 0);
  EXPECT_LT(port, 65536);
}

TEST(RandomHexTest, HasTheLengthAskedAndOnlyHexDigits) {
  std::string h = RandomHex(32);
  ASSERT_EQ(h.size(), 32u);
  EXPECT_EQ(h.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_NE(RandomHex(32), h);
}

TEST(EnvironmentTest, ProcessEnvironmentReadsTheEnvironment) {
  setenv("DLAUNCH_TEST_ENVIRONMENT", "x,y", 1);
  EXPECT_EQ(ProcessEnvironment()("DLAUNCH_TEST_ENVIRONMENT"), "x,y");
  unsetenv("DLAUNCH_TEST_ENVIRONMENT");
  EXPECT_EQ(ProcessEnvironment()("DLAUNCH_TEST_ENVIRONMENT"), std::nullopt);
}

TEST(EnvironmentTest, MapEnvironmentAnswersOnlyItsVariables) {
  EnvLookup env = MapEnvironment({{"PBS_NODEFILE", "/var/spool/nodes"}});
  EXPECT_EQ(env("PBS_NODEFILE").value_or(""), "/var/spool/nodes");
  EXPECT_FALSE(env("COBALT_NODEFILE").has_value());
}

}  // namespace
}  // namespace dlaunch
