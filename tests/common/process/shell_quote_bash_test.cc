// ShellQuote must give bash a word that expands to exactly the input, whatever it holds; the
// round trip is checked by running bash itself.
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/shell_quote.h"

namespace dlaunch {
namespace {

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

}  // namespace
}  // namespace dlaunch
