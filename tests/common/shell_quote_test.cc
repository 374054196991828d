// ShellQuote must give bash a word that expands to exactly the input, whatever it holds; the
// round trip is checked by running bash itself.
#include "common/shell_quote.h"

#include <cstdio>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace dlaunch {
namespace {

using ::testing::HasSubstr;

// What bash prints for `printf %s <word>`.
std::string BashEcho(const std::string& word) {
  std::string script = "printf %s " + word;
  std::string cmd = "bash -c " + ShellQuote(script);
  FILE* p = ::popen(cmd.c_str(), "r");
  std::string out;
  char buf[256];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  ::pclose(p);
  return out;
}

TEST(ShellQuote, PlainWordsStayUnquoted) {
  EXPECT_EQ(ShellQuote("/opt/dlaunch/bin/dlaunch"), "/opt/dlaunch/bin/dlaunch");
  EXPECT_EQ(ShellQuote("fmnist-20261121-101530-a3f9"), "fmnist-20261121-101530-a3f9");
  EXPECT_EQ(ShellQuote(""), "''");
  EXPECT_EQ(ShellQuote("a b"), "'a b'");
  EXPECT_EQ(ShellQuote("it's"), "'it'\\''s'");
}

TEST(ShellQuote, HostileStringsRoundTripThroughBash) {
  const std::vector<std::string> values = {
      "x; rm -rf ~",      "$(touch /tmp/dlaunch-pwned)", "`touch /tmp/dlaunch-pwned`",
      "a\nb\nc",          "it's \"quoted\"",             "${HOME}",
      "*",                "~",                           "a=b",
      "--flag",           "tab\there",                   "back\\slash",
      "'''",              "!event",                      "semi;colon|pipe&amp>redir<in",
      "\r\n",             "#comment",                    "ünïcödé"};
  for (const auto& v : values) {
    EXPECT_EQ(BashEcho(ShellQuote(v)), v) << "value: " << v;
  }
  EXPECT_NE(::access("/tmp/dlaunch-pwned", F_OK), 0);
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
