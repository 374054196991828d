// The agent's flags: the argv the launcher builds parses, and every bad value is refused with
// the flag's name.
#include "agent/agent_flags.h"

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/testing/test_files.h"

namespace dlaunch {
namespace {

TEST(AgentFlagsTest, TheLaunchersArgvParses) {
  // As launcher/cli/run_command.cc builds it (std::to_string of a double for the timeout).
  auto f = ParseAgentFlags({"--control", "10.0.0.1:4000", "--token-file", "/jobs/j/token",
                            "--nproc", "4", "--join-timeout", "300.000000", "--tail-lines", "20",
                            "--host", "n1", "--addr", "10.0.0.2"});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->options.control, "10.0.0.1:4000");
  EXPECT_EQ(f->token_file, "/jobs/j/token");
  EXPECT_EQ(f->options.nproc, 4);
  EXPECT_DOUBLE_EQ(f->options.join_timeout_s, 300);
  EXPECT_EQ(f->options.tail_lines, 20);
  EXPECT_EQ(f->options.host, "n1");
  EXPECT_EQ(f->options.addr, "10.0.0.2");
  EXPECT_FALSE(f->help);
}

TEST(AgentFlagsTest, AnAgentPicksItsRelayFromAListByItsRank) {
  const std::string list = "r0:1,r1:2,r2:3";
  auto env = [](std::map<std::string, std::string> vars) {
    return [vars](const char* name) -> const char* {
      auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  };
  EXPECT_EQ(*PickControlAddress("h:1", env({}), "n1"), "h:1");
  EXPECT_EQ(*PickControlAddress(list, env({{"PMI_RANK", "4"}}), "n1"), "r1:2");
  EXPECT_EQ(*PickControlAddress(list, env({{"PALS_RANKID", "2"}}), "n1"), "r2:3");
  EXPECT_EQ(*PickControlAddress(list, env({{"OMPI_COMM_WORLD_RANK", "3"}}), "n1"), "r0:1");
  EXPECT_EQ(*PickControlAddress(list, env({{"SLURM_PROCID", "7"}}), "n1"), "r1:2");
  // PMI_RANK first; a rank that is not a number is passed over.
  EXPECT_EQ(*PickControlAddress(list, env({{"PMI_RANK", "x"}, {"SLURM_PROCID", "2"}}), "n1"), "r2:3");
  // No rank: the host name decides, the same way every time.
  auto by_host = PickControlAddress(list, env({}), "node17");
  ASSERT_TRUE(by_host.ok());
  EXPECT_EQ(*by_host, *PickControlAddress(list, env({}), "node17"));
  EXPECT_FALSE(PickControlAddress("r0:1,,r2:3", env({}), "n1").ok());
  // Through the flags: the picked address is what the agent uses.
  setenv("SLURM_PROCID", "1", 1);
  auto f = ParseAgentFlags({"--control", list});
  unsetenv("SLURM_PROCID");
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->options.control, "r1:2");
}

TEST(AgentFlagsTest, DefaultsWhenOnlyControlIsGiven) {
  auto f = ParseAgentFlags({"--control=h:1"});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->options.nproc, 0);
  EXPECT_DOUBLE_EQ(f->options.join_timeout_s, 300);
  EXPECT_EQ(f->options.tail_lines, 20);
  EXPECT_EQ(f->token_file, "");
}

TEST(AgentFlagsTest, BadValuesAreRefusedNamingTheFlag) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"--nproc", "abc"},       {"--nproc", "-1"},         {"--join-timeout", "soon"},
      {"--join-timeout", "-5"}, {"--tail-lines", "1.5"},   {"--control", ""},
  };
  for (const auto& [flag, value] : bad) {
    auto f = ParseAgentFlags({"--control", "h:1", flag, value});
    ASSERT_FALSE(f.ok()) << flag << " " << value;
    EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(f.status().message().find(flag), std::string::npos) << f.status();
  }
}

TEST(AgentFlagsTest, UnknownMissingAndStrayArgumentsAreRefused) {
  auto unknown = ParseAgentFlags({"--control", "h:1", "--nprocs", "2"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("did you mean --nproc"), std::string::npos)
      << unknown.status();
  EXPECT_FALSE(ParseAgentFlags({"--control", "h:1", "--nproc"}).ok());
  EXPECT_FALSE(ParseAgentFlags({"--control", "h:1", "extra"}).ok());
  auto no_control = ParseAgentFlags({"--nproc", "2"});
  ASSERT_FALSE(no_control.ok());
  EXPECT_NE(no_control.status().message().find("--control"), std::string::npos);
}

TEST(AgentFlagsTest, HelpNeedsNothingElse) {
  auto f = ParseAgentFlags({"--help"});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_TRUE(f->help);
}

TEST(AgentTokenTest, TheFileWinsAndNamesNoCertificateForPlainTcp) {
  ScratchDir dir;
  WriteFile(dir.path() + "/token", "s3cret\n");
  auto t = ReadAgentCredentials(dir.path() + "/token", "from-env");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->token, "s3cret");
  EXPECT_EQ(t->fingerprint, "");
  EXPECT_EQ(t->cert_pem, "");
}

TEST(AgentTokenTest, TheEnvironmentIsTheFallbackAndNoTokenIsAnError) {
  auto t = ReadAgentCredentials("", "from-env");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->token, "from-env");
  EXPECT_EQ(ReadAgentCredentials("", nullptr).status().code(), absl::StatusCode::kInvalidArgument);
  auto missing = ReadAgentCredentials("/nonexistent/token", "from-env");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("--token-file"), std::string::npos);
}

TEST(AgentTokenTest, ACertificateThatIsNotThePinnedOneIsRefused) {
  ScratchDir dir;
  auto job = MakeControlIdentity();
  auto other = MakeControlIdentity();
  ASSERT_TRUE(job.ok() && other.ok());
  WriteFile(dir.path() + "/token", FormatTokenFile("s3cret", job->fingerprint));
  WriteFile(dir.path() + "/control.crt", job->cert_pem);
  auto t = ReadAgentCredentials(dir.path() + "/token", nullptr);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->cert_pem, job->cert_pem);
  WriteFile(dir.path() + "/control.crt", other->cert_pem);
  auto swapped = ReadAgentCredentials(dir.path() + "/token", nullptr);
  ASSERT_FALSE(swapped.ok());
  EXPECT_NE(swapped.status().message().find("is not the certificate the token file pins"),
            std::string::npos)
      << swapped.status();
}

}  // namespace
}  // namespace dlaunch
