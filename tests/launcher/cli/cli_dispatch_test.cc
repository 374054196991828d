// `dlaunch <command>`: the dispatcher's own answers -- every command's --help, `dlaunch help
// COMMAND`, a suggestion for a mistyped command, and what --version says of the build.
#include "launcher/cli/cli.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "launcher/cli/build_info.h"

namespace dlaunch {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

struct Result {
  int code;
  std::string out;
  std::string err;
};

Result Dlaunch(std::vector<std::string> args) {
  args.insert(args.begin(), "dlaunch");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  const int code = RunCli(static_cast<int>(argv.size()), argv.data());
  std::cout.flush();
  std::cerr.flush();
  std::string out = ::testing::internal::GetCapturedStdout();
  return {code, out, ::testing::internal::GetCapturedStderr()};
}

TEST(CliDispatchTest, EveryCommandsHelpExitsZeroAndSaysItsUsage) {
  for (const std::string& name : CommandNames()) {
    Result r = Dlaunch({name, "--help"});
    EXPECT_EQ(r.code, 0) << name << ": " << r.err;
    EXPECT_EQ(r.err, "") << name;
    if (name != "version" && name != "help") {
      EXPECT_THAT(r.out, HasSubstr("usage: dlaunch " + name)) << name;
    }
  }
}

TEST(CliDispatchTest, ValidateHelpIsValidatesOwn) {
  Result r = Dlaunch({"validate", "--help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_THAT(r.out, StartsWith("usage: dlaunch validate job.yaml"));
  Result bad = Dlaunch({"validate"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_THAT(bad.err, HasSubstr("usage: dlaunch validate"));
}

TEST(CliDispatchTest, HelpCommandPrintsThatCommandsHelp) {
  Result global = Dlaunch({"help"});
  EXPECT_EQ(global.code, 0);
  for (const std::string& name : CommandNames()) {
    if (name == "version" || name == "help") continue;
    Result via_help = Dlaunch({"help", name});
    Result via_flag = Dlaunch({name, "--help"});
    EXPECT_EQ(via_help.code, 0) << name;
    EXPECT_EQ(via_help.out, via_flag.out) << name;
    EXPECT_NE(via_help.out, global.out) << name;
  }
  EXPECT_THAT(Dlaunch({"help", "run"}).out, HasSubstr("--nproc-per-node"));
  Result unknown = Dlaunch({"help", "rnu"});
  EXPECT_EQ(unknown.code, 2);
  EXPECT_THAT(unknown.err, HasSubstr("no command 'rnu' (did you mean 'run'?)"));
}

TEST(CliDispatchTest, AMistypedCommandGetsASuggestion) {
  Result r = Dlaunch({"stauts"});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, StartsWith("dlaunch: unknown command 'stauts' (did you mean 'status'?)"));
  EXPECT_EQ(Dlaunch({"valdiate", "job.yaml"}).err.find("did you mean 'validate'?") != std::string::npos,
            true);
  Result far = Dlaunch({"frobnicate"});
  EXPECT_EQ(far.code, 2);
  EXPECT_THAT(far.err, Not(HasSubstr("did you mean")));
  EXPECT_THAT(far.err, HasSubstr("usage: dlaunch <command>"));
}

TEST(CliDispatchTest, VersionNamesTheCommitAndTheLibTorch) {
  Result r = Dlaunch({"--version"});
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, VersionText());
  EXPECT_THAT(r.out, StartsWith(std::string("dlaunch ") + kDlaunchVersion + " (commit " +
                                kBuildCommit + ", dlaunch-worker "));
  EXPECT_THAT(r.out, kBuildLibTorch[0] != '\0'
                         ? HasSubstr(std::string("on LibTorch ") + kBuildLibTorch + ")\n")
                         : HasSubstr("not built)\n"));
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  EXPECT_NE(std::string(kBuildCommit), "");
  // Built from a git checkout, the commit is known.
  if (std::filesystem::exists(std::string(DLAUNCH_SOURCE_DIR) + "/.git")) {
    EXPECT_NE(std::string(kBuildCommit), "unknown");
  }
}

}  // namespace
}  // namespace dlaunch
