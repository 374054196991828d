// The probes the stack dumper looks at a process with, on real processes of this machine.
#include "agent/health/python_process.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

namespace dlaunch {
namespace {

TEST(PythonProcessTest, AStoppedProcessIsSeenStoppedAndAgainRunningAfterSigcont) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    for (;;) pause();
  }
  EXPECT_FALSE(IsStoppedProcess(child));
  ASSERT_EQ(kill(child, SIGSTOP), 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, WUNTRACED), child);  // stopped for sure
  EXPECT_TRUE(IsStoppedProcess(child));
  ASSERT_EQ(kill(child, SIGCONT), 0);
  ASSERT_EQ(waitpid(child, &status, WCONTINUED), child);
  EXPECT_FALSE(IsStoppedProcess(child));
  kill(child, SIGKILL);
  waitpid(child, &status, 0);
  EXPECT_FALSE(IsStoppedProcess(child));  // gone
  EXPECT_FALSE(IsPythonProcess(child));
}

}  // namespace
}  // namespace dlaunch
