// The warm process's command line and request format (agent/workers/warm_start.h), without processes.
#include "agent/workers/warm_start.h"

#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dlaunch {
namespace {

using ::testing::ElementsAre;

TEST(WarmStartTest, OnlyAPythonScriptOrDlaunchWorkerCanStartWarm) {
  EXPECT_TRUE(WarmStartable({"python3", "-u", "train.py", "--lr", "1"}));
  EXPECT_TRUE(WarmStartable({"/venv/bin/python", "-X", "dev", "train.py"}));
  EXPECT_FALSE(WarmStartable({"python3", "-m", "train"}));
  EXPECT_FALSE(WarmStartable({"python3", "-c", "pass"}));
  EXPECT_FALSE(WarmStartable({"python3"}));
  EXPECT_FALSE(WarmStartable({"/bin/sh", "-c", "exec dlaunch-worker"}));
  EXPECT_FALSE(WarmStartable({"my-dlaunch-worker", "--steps", "1"}));
  EXPECT_TRUE(WarmStartable({"dlaunch-worker"}));
  EXPECT_TRUE(WarmStartable({"/opt/dlaunch/bin/dlaunch-worker", "--steps", "1"}));
}

TEST(WarmStartTest, DlaunchWorkersWarmProcessIsItselfServingBeforeTheJobsFlags) {
  EXPECT_THAT(ZygoteCommand({"/b/dlaunch-worker", "--steps", "1"}, "/s/z.sock"),
              ElementsAre("/b/dlaunch-worker", "--warm-serve", "/s/z.sock", "--steps", "1"));
}

TEST(WarmStartTest, TheWarmProcessKeepsTheInterpretersFlagsAndNamesTheScript) {
  std::vector<std::string> cmd =
      ZygoteCommand({"python3", "-u", "-X", "dev", "train.py", "--lr", "1"}, "/s/z.sock");
  ASSERT_EQ(cmd.size(), 8u);
  EXPECT_THAT(std::vector<std::string>(cmd.begin(), cmd.begin() + 4),
              ElementsAre("python3", "-u", "-X", "dev"));
  EXPECT_EQ(cmd[4], "-c");
  EXPECT_EQ(cmd[5], kZygoteProgram);
  EXPECT_THAT(std::vector<std::string>(cmd.begin() + 6, cmd.end()),
              ElementsAre("/s/z.sock", "train.py"));
}

TEST(WarmStartTest, ARequestHoldsEveryFieldNulSeparatedWithTheEnvironmentLast) {
  SpawnOptions o;
  o.argv = {"python3", "train.py", "a b"};
  o.envp = {"RANK=1", "X=y=z"};
  o.workdir = "/job";
  o.cpu_affinity = {0, 3};
  o.parent_death_signal = 9;
  o.traceable_by_parent = true;
  const std::string body = ZygoteRequestBody(o, 4242);
  ASSERT_EQ(body.back(), '\0');
  std::vector<std::string> fields = absl::StrSplit(body.substr(0, body.size() - 1), '\0');
  EXPECT_THAT(fields, ElementsAre("dlaunch-zygote-1", "/job", "0,3", "4242", "9", "1", "3",
                                  "python3", "train.py", "a b", "RANK=1", "X=y=z"));
}

TEST(WarmStartTest, TheEmbeddedProgramIsTheZygote) {
  EXPECT_NE(std::string(kZygoteProgram).find("MAGIC = b\"dlaunch-zygote-1\""), std::string::npos);
}

}  // namespace
}  // namespace dlaunch
