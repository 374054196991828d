// ForkProcess/AwaitExec: an exec or chdir failure comes back as a status whose code follows its
// errno. Forks a child that never runs a program of its own.
#include "common/process.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "gtest/gtest.h"
#include "tests/testing/test_files.h"

namespace dlaunch {
namespace {

absl::Status Spawn(SpawnOptions options) {
  auto pending = ForkProcess(options);
  if (!pending.ok()) return pending.status();
  auto spawned = AwaitExec(std::move(*pending));
  if (!spawned.ok()) return spawned.status();
  int st = 0;
  waitpid(spawned->pid, &st, 0);
  return absl::OkStatus();
}

TEST(ProcessTest, AMissingProgramIsNotFound) {
  SpawnOptions o;
  o.argv = {"/nonexistent/dlaunch-test-program"};
  absl::Status st = Spawn(o);
  EXPECT_EQ(st.code(), absl::StatusCode::kNotFound) << st;
  EXPECT_NE(st.message().find("/nonexistent/dlaunch-test-program"), std::string::npos) << st;
}

TEST(ProcessTest, AProgramWithoutExecutePermissionIsPermissionDenied) {
  // No execute bit at all: refused even to root.
  ScratchDir dir;
  std::string path = dir.path() + "/not-executable";
  WriteFile(path, "#!/bin/sh\nexit 0\n");
  chmod(path.c_str(), 0644);
  SpawnOptions o;
  o.argv = {path};
  absl::Status st = Spawn(o);
  EXPECT_EQ(st.code(), absl::StatusCode::kPermissionDenied) << st;
}

TEST(ProcessTest, AMissingWorkingDirectoryIsNotFoundAndNamed) {
  SpawnOptions o;
  o.argv = {"true"};
  o.workdir = "/nonexistent/dlaunch-test-dir";
  absl::Status st = Spawn(o);
  EXPECT_EQ(st.code(), absl::StatusCode::kNotFound) << st;
  EXPECT_NE(st.message().find("/nonexistent/dlaunch-test-dir"), std::string::npos) << st;
}

TEST(ProcessTest, DescribeWaitStatusNamesExitCodesAndSignals) {
  EXPECT_EQ(DescribeWaitStatus(W_EXITCODE(3, 0)), "exit code 3");
  EXPECT_EQ(DescribeWaitStatus(W_EXITCODE(0, SIGKILL)).rfind("signal 9 (", 0), 0u);
}

}  // namespace
}  // namespace dlaunch
