// The agent's flags: the argv the launcher builds parses, and every bad value is refused with
// the flag's name.
#include "agent/agent_flags.h"

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

TEST(AgentTokenTest, TheFileWinsAndOnlyItsFirstLineCounts) {
  ScratchDir dir;
  WriteFile(dir.path() + "/token", "s3cret\nignored\n");
  auto t = ReadAgentToken(dir.path() + "/token", "from-env");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(*t, "s3cret");
}

TEST(AgentTokenTest, TheEnvironmentIsTheFallbackAndNoTokenIsAnError) {
  auto t = ReadAgentToken("", "from-env");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(*t, "from-env");
  EXPECT_EQ(ReadAgentToken("", nullptr).status().code(), absl::StatusCode::kInvalidArgument);
  auto missing = ReadAgentToken("/nonexistent/token", "from-env");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("--token-file"), std::string::npos);
}

}  // namespace
}  // namespace dlaunch
