#include "launcher/run/node_launch.h"

#include <gtest/gtest.h>

namespace dlaunch {
namespace {

using Commands = std::vector<std::vector<std::string>>;

NodeLaunchInput Input(const std::string& kind) {
  NodeLaunchInput in;
  in.kind = kind;
  in.hosts = {"x1", "x2", "x3"};
  in.agent_argv = {"/opt/dlaunch/bin/dlaunch-agent", "--control", "10.0.0.1:4000"};
  in.hostfile = "/runs/j/hostfile";
  return in;
}

TEST(NodeLaunchTest, LocalStartsOneAgentPerNode) {
  auto c = BuildNodeLaunchCommands(Input("local"));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, Commands(3, Input("local").agent_argv));
}

TEST(NodeLaunchTest, MpiexecIsOneCommandWithOneUnboundProcessPerNode) {
  // Outside PBS, mpiexec is MPICH's hydra, which spells "no binding" -bind-to none.
  auto c = BuildNodeLaunchCommands(Input("mpiexec"));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, (Commands{{"mpiexec", "-n", "3", "--ppn", "1", "-bind-to", "none", "--hostfile",
                           "/runs/j/hostfile", "/opt/dlaunch/bin/dlaunch-agent", "--control",
                           "10.0.0.1:4000"}}));
}

TEST(NodeLaunchTest, MpiexecUnderPbsUsesPalsSpelling) {
  auto in = Input("mpiexec");
  in.scheduler = "pbs";
  auto c = BuildNodeLaunchCommands(in);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, (Commands{{"mpiexec", "-n", "3", "--ppn", "1", "--cpu-bind", "none", "--hostfile",
                           "/runs/j/hostfile", "/opt/dlaunch/bin/dlaunch-agent", "--control",
                           "10.0.0.1:4000"}}));
}

TEST(NodeLaunchTest, MpirunUsesOpenMpiSpellingAndDoesNotBind) {
  auto c = BuildNodeLaunchCommands(Input("mpirun"));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*c)[0], (std::vector<std::string>{"mpirun", "-n", "3", "-npernode", "1", "--bind-to",
                                               "none", "-hostfile", "/runs/j/hostfile",
                                               "/opt/dlaunch/bin/dlaunch-agent", "--control",
                                               "10.0.0.1:4000"}));
}

TEST(NodeLaunchTest, SrunNamesTheNodesAndDoesNotBind) {
  auto c = BuildNodeLaunchCommands(Input("srun"));
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->size(), 1u);
  const auto& cmd = (*c)[0];
  EXPECT_EQ(cmd[0], "srun");
  EXPECT_NE(std::find(cmd.begin(), cmd.end(), "--ntasks-per-node=1"), cmd.end());
  EXPECT_NE(std::find(cmd.begin(), cmd.end(), "--cpu-bind=none"), cmd.end());
  EXPECT_NE(std::find(cmd.begin(), cmd.end(), "--nodelist=x1,x2,x3"), cmd.end());
}

TEST(NodeLaunchTest, PrefixReplacesTheDefault) {
  auto in = Input("mpiexec");
  in.prefix = {"mpiexec", "-n", "3", "--ppn", "1", "--cpu-bind", "none"};
  auto c = BuildNodeLaunchCommands(in);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*c)[0], (std::vector<std::string>{"mpiexec", "-n", "3", "--ppn", "1", "--cpu-bind", "none",
                                               "/opt/dlaunch/bin/dlaunch-agent", "--control",
                                               "10.0.0.1:4000"}));
}

TEST(NodeLaunchTest, SshQuotesTheRemoteCommand) {
  auto in = Input("ssh");
  in.workdir = "/home/me/my job";
  in.agent_argv.push_back("it's");
  auto c = BuildNodeLaunchCommands(in);
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->size(), 3u);
  EXPECT_EQ((*c)[1][0], "ssh");
  EXPECT_EQ((*c)[1][(*c)[1].size() - 2], "x2");
  EXPECT_EQ((*c)[1].back(),
            "cd '/home/me/my job' && exec /opt/dlaunch/bin/dlaunch-agent --control 10.0.0.1:4000 'it'\\''s'");
}

TEST(NodeLaunchTest, EachLocalOrSshNodeIsGivenItsRelayAndMpiAgentsTheList) {
  auto in = Input("local");
  in.control_per_node = {"10.0.0.1:5001", "10.0.0.1:5002", "10.0.0.1:5001"};
  auto c = BuildNodeLaunchCommands(in);
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->size(), 3u);
  EXPECT_EQ((*c)[1], (std::vector<std::string>{"/opt/dlaunch/bin/dlaunch-agent", "--control", "10.0.0.1:5002"}));
  EXPECT_EQ((*c)[2].back(), "10.0.0.1:5001");
  in.kind = "ssh";
  c = BuildNodeLaunchCommands(in);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*c)[1].back(), "/opt/dlaunch/bin/dlaunch-agent --control 10.0.0.1:5002");
  // One command for every node: the argv keeps what it was given (the list, from the launcher).
  in.kind = "srun";
  in.agent_argv.back() = "10.0.0.1:5001,10.0.0.1:5002";
  c = BuildNodeLaunchCommands(in);
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->size(), 1u);
  EXPECT_EQ((*c)[0].back(), "10.0.0.1:5001,10.0.0.1:5002");
}

TEST(NodeLaunchTest, UnknownKindAndEmptyInputsAreErrors) {
  auto c = BuildNodeLaunchCommands(Input("pdsh"));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(),
            "unknown node launcher 'pdsh' (expected local, ssh, mpiexec, mpirun or srun)");
  auto in = Input("local");
  in.hosts.clear();
  EXPECT_FALSE(BuildNodeLaunchCommands(in).ok());
}

}  // namespace
}  // namespace dlaunch
