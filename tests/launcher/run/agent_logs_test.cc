// AgentLogs: which node launcher's log holds which agent, so the log is named by node id. Local
// agents are told by their pid, ssh ones by their host; one launcher for every agent (mpiexec,
// srun), a host with two agents, or an agent claimed twice is left as launched.
#include "launcher/run/agent_logs.h"

#include <gtest/gtest.h>

namespace dlaunch {
namespace {

Participant Agent(const std::string& agent_id, const std::string& host, const std::string& addr = "") {
  Participant p;
  p.agent_id = agent_id;
  p.host = host;
  p.addr = addr;
  return p;
}

TEST(AgentLogsTest, LocalAgentsAreToldByTheirPidWhateverOrderTheyJoinIn) {
  AgentLogs logs(LaunchedAgentsOf("local", {"localhost", "localhost", "localhost"}, {501, 502, 503}));
  EXPECT_EQ(logs.Claim(Agent("box:503:abcdef", "box")), std::optional<int>(2));
  EXPECT_EQ(logs.Claim(Agent("box:501:abcdef", "box")), std::optional<int>(0));
  EXPECT_EQ(logs.Claim(Agent("box:502:abcdef", "box")), std::optional<int>(1));
  EXPECT_EQ(logs.Claim(Agent("box:502:abcdef", "box")), std::nullopt) << "claimed once";
}

TEST(AgentLogsTest, ALocalAgentStartedThroughAWrapperThatForkedIsNotGuessed) {
  AgentLogs logs(LaunchedAgentsOf("local", {"localhost", "localhost"}, {501, 502}));
  EXPECT_EQ(logs.Claim(Agent("box:777:abcdef", "box")), std::nullopt);
  EXPECT_EQ(logs.Claim(Agent("not-an-id", "box")), std::nullopt);
}

TEST(AgentLogsTest, SshAgentsAreToldByTheirHostShortOrFull) {
  AgentLogs logs(LaunchedAgentsOf("ssh", {"h1.cluster", "h2", "h3"}, {901, 902, 903}));
  // The pid is the remote agent's: it says nothing here, even when it equals a local one.
  EXPECT_EQ(logs.Claim(Agent("h3:901:abcdef", "h3")), std::optional<int>(2));
  EXPECT_EQ(logs.Claim(Agent("h1:5:abcdef", "h1")), std::optional<int>(0));
  EXPECT_EQ(logs.Claim(Agent("x:5:abcdef", "x", "h2")), std::optional<int>(1)) << "by its address";
  EXPECT_EQ(logs.Claim(Agent("h9:5:abcdef", "h9")), std::nullopt);
}

TEST(AgentLogsTest, TwoSshLaunchersToOneHostAreNotToldApart) {
  AgentLogs logs(LaunchedAgentsOf("ssh", {"h1", "h1", "h2"}, {901, 902, 903}));
  EXPECT_EQ(logs.Claim(Agent("h1:5:abcdef", "h1")), std::nullopt);
  EXPECT_EQ(logs.Claim(Agent("h2:5:abcdef", "h2")), std::optional<int>(2));
}

TEST(AgentLogsTest, OneLauncherForEveryAgentKeepsItsOneLog) {
  for (const char* kind : {"mpiexec", "mpirun", "srun"}) {
    EXPECT_TRUE(LaunchedAgentsOf(kind, {"h1", "h2"}, {901}).empty()) << kind;
  }
  AgentLogs logs({});
  EXPECT_EQ(logs.Claim(Agent("h1:901:abcdef", "h1")), std::nullopt);
}

TEST(AgentLogsTest, NamesAndPids) {
  EXPECT_EQ(AgentLogs::LauncherLogName(2), "launcher-2.log");
  EXPECT_EQ(AgentLogs::AgentLogName(3), "agent-3.log");
  EXPECT_EQ(AgentPidOf("host:123:ab12cd"), std::optional<pid_t>(123));
  EXPECT_EQ(AgentPidOf("a:b:123:ab12cd"), std::optional<pid_t>(123)) << "a host with a colon";
  EXPECT_EQ(AgentPidOf("host:x:ab12cd"), std::nullopt);
  EXPECT_EQ(AgentPidOf("123"), std::nullopt);
}

}  // namespace
}  // namespace dlaunch
