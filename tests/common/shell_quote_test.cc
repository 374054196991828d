// ShellQuote's words, ShellJoin, and the checks on names and directive values. That bash expands
// each quoted word to exactly its input is checked by running bash, in
// process/shell_quote_bash_test.cc.
#include "common/shell_quote.h"

#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace dlaunch {
namespace {

using ::testing::HasSubstr;

TEST(ShellQuote, PlainWordsStayUnquoted) {
  EXPECT_EQ(ShellQuote("/opt/dlaunch/bin/dlaunch"), "/opt/dlaunch/bin/dlaunch");
  EXPECT_EQ(ShellQuote("fmnist-20261121-101530-a3f9"), "fmnist-20261121-101530-a3f9");
  EXPECT_EQ(ShellQuote(""), "''");
  EXPECT_EQ(ShellQuote("a b"), "'a b'");
  EXPECT_EQ(ShellQuote("it's"), "'it'\\''s'");
}

TEST(ShellQuote, JoinQuotesEachWord) {
  EXPECT_EQ(ShellJoin({"mpiexec", "-n", "2", "a b"}), "mpiexec -n 2 'a b'");
}

TEST(IsShellVariableName, Accepts) {
  EXPECT_TRUE(IsShellVariableName("PBS_NODEFILE"));
  EXPECT_TRUE(IsShellVariableName("_x1"));
  EXPECT_FALSE(IsShellVariableName("1x"));
  EXPECT_FALSE(IsShellVariableName("A-B"));
  EXPECT_FALSE(IsShellVariableName(""));
  EXPECT_FALSE(IsShellVariableName("A}$(id)"));
}

TEST(CheckDirectiveValue, AcceptsSafeAndNamesTheProblem) {
  EXPECT_TRUE(CheckDirectiveValue("name", "fmnist_v2.1-a").ok());
  EXPECT_TRUE(CheckDirectiveValue("queue", "debug@polaris-pbs", "@").ok());
  absl::Status s = CheckDirectiveValue("name", "x; rm -rf ~");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("name"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("';'"));
  s = CheckDirectiveValue("scheduler.account", "a\nb");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("a newline"));
  EXPECT_FALSE(CheckDirectiveValue("queue", "debug@x").ok());
  EXPECT_FALSE(CheckDirectiveValue("name", "").ok());
}

}  // namespace
}  // namespace dlaunch
