// RunCommand and detached starts (DetachedArgv) with real programs (/bin/sh, sleep): output, exit codes, exec
// failures, the deadline, and a detached job that leads its own session.
#include "common/command_runner.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/test_files.h"
#include "tests/testing/wait_for.h"

namespace dlaunch {
namespace {

using ::testing::HasSubstr;

TEST(RunCommand, CollectsOutputAndExitCode) {
  absl::StatusOr<CommandResult> r =
      RunCommand({"sh", "-c", "echo out; echo err >&2; exit 7"}, 30);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->out, "out\n");
  EXPECT_EQ(r->err, "err\n");
  EXPECT_EQ(r->exit_code, 7);
}

TEST(RunCommand, KilledBySignalIs128PlusTheSignal) {
  absl::StatusOr<CommandResult> r = RunCommand({"sh", "-c", "kill -TERM $$"}, 30);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 128 + SIGTERM);
}

TEST(RunCommand, MissingProgramIsUnavailableAndNamesIt) {
  absl::StatusOr<CommandResult> r = RealCommandRunner()({"/nonexistent/qsub"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("/nonexistent/qsub"));
  EXPECT_EQ(RunCommand({}, 30).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(RunCommand, DeadlineKillsTheProgram) {
  absl::StatusOr<CommandResult> r = RealCommandRunner(0.3)({"sleep", "30"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("sleep 30 did not finish"));
}

// Starts `argv` detached the way the local scheduler does: DetachedArgv run to completion.
absl::StatusOr<pid_t> StartDetached(const std::vector<std::string>& argv,
                                    const std::string& output_path) {
  absl::StatusOr<CommandResult> result = RunCommand(DetachedArgv(argv, output_path), 30);
  if (!result.ok()) return result.status();
  return ParseDetachedPid(*result);
}

// True while the process exists and is not a zombie.
bool Alive(pid_t pid) {
  const std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  const size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] != 'Z';
}

TEST(DetachedArgv, JobLeadsItsOwnSessionAndWritesToTheOutputFile) {
  ScratchDir tmp("dlaunch-detached");
  const std::string out = tmp.path() + "/out";
  absl::StatusOr<pid_t> pid = StartDetached({"sh", "-c", "echo started; exec sleep 60"}, out);
  ASSERT_TRUE(pid.ok()) << pid.status();
  // The start returned although the job runs on: the pid pipe did not stay open.
  EXPECT_TRUE(Alive(*pid));
  EXPECT_EQ(::getsid(*pid), *pid);
  EXPECT_EQ(::getpgid(*pid), *pid);
  EXPECT_NE(::getppid(), *pid);
  EXPECT_TRUE(WaitFor([&] { return !ReadFile(out).empty(); }, std::chrono::seconds(10)));
  EXPECT_EQ(ReadFile(out), "started\n");
  ASSERT_EQ(::kill(-*pid, SIGTERM), 0);
  EXPECT_TRUE(WaitFor([&] { return !Alive(*pid); }, std::chrono::seconds(10)));
}

TEST(DetachedArgv, UnwritableOutputIsUnavailable) {
  absl::StatusOr<pid_t> pid = StartDetached({"true"}, "/nonexistent/dir/out");
  ASSERT_FALSE(pid.ok());
  EXPECT_EQ(pid.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(pid.status().message()), HasSubstr("could not start"));
}

TEST(ParseDetachedPid, ReadsThePidOrExplains) {
  EXPECT_EQ(*ParseDetachedPid(CommandResult{0, "4242\n", ""}), 4242);
  EXPECT_FALSE(ParseDetachedPid(CommandResult{0, "", ""}).ok());
  absl::Status s =
      ParseDetachedPid(CommandResult{2, "", "sh: cannot create /x: Denied\n"}).status();
  EXPECT_EQ(s.message(), "could not start the job in the background (exit 2): sh: cannot create "
                         "/x: Denied");
}

}  // namespace
}  // namespace dlaunch
