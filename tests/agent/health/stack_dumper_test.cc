// StackDumper with a fake process launcher, a manual clock and a made-up view of the targets:
// which source each rank's stacks come from (py-spy, gdb), the files and frames they give, and
// the budget that bounds each source and the whole dump, with no process and no sleeping. The
// worker server, a real Unix socket, is in process/stack_dumper_socket_test.cc.
#include "agent/health/stack_dumper.h"

#include <signal.h>
#include <sys/wait.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/agent/stack_dumper_fixture.h"

namespace dlaunch {
namespace {

using stack_dumper_testing::Fixture;
using stack_dumper_testing::StackDumperTest;
using std::chrono::milliseconds;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

TEST_F(StackDumperTest, OneGdbPerRankAndDoneOnceTheLastEnded) {
  Start({{1, 4242}, {3, 4343}});
  // The fake numbers its children from 1000, in the order they were started.
  EXPECT_THAT(launcher_.options(1000).argv,
              ElementsAre("gdb", "-batch", "-nx", "-p", "4242", "-ex", "thread apply all bt"));
  EXPECT_EQ(launcher_.options(1001).argv[4], "4343");
  EXPECT_TRUE(dumper_.busy());

  launcher_.Write(1000, "Thread 1 (LWP 4242):\n#0 poll ()\n");
  launcher_.Exit(1000, W_EXITCODE(0, 0));
  Settle();
  EXPECT_EQ(done_, 0) << "rank 3's gdb still runs";
  EXPECT_THAT(Stacks(1), HasSubstr("#0 poll ()"));

  launcher_.Write(1001, "Thread 1 (LWP 4343):\n", true);
  launcher_.Exit(1001, W_EXITCODE(0, 0));
  Settle();
  EXPECT_EQ(done_, 1);
  EXPECT_FALSE(dumper_.busy());
  EXPECT_THAT(Stacks(3), HasSubstr("LWP 4343"));
  clock_.Advance(milliseconds(20000));
  Settle();
  EXPECT_EQ(done_, 1) << "the budget timer of a finished dump is gone";
}

TEST_F(StackDumperTest, TheBudgetEndsTheDumpAndKillsWhatStillRuns) {
  Start({{2, 5000}}, 3000);
  launcher_.Write(1000, "Thread 1 (LWP 5000):\n");
  Settle();
  clock_.Advance(milliseconds(2999));
  Settle();
  EXPECT_EQ(done_, 0);
  clock_.Advance(milliseconds(1));
  Settle();
  EXPECT_EQ(done_, 1);
  EXPECT_EQ(launcher_.SignalsWhileRunning(1000, SIGKILL), 1);
  EXPECT_THAT(Stacks(2), HasSubstr("LWP 5000"));
  EXPECT_THAT(Stacks(2), HasSubstr("no time left"));
  // The killed gdb's exit comes later and changes nothing.
  launcher_.Exit(1000, W_EXITCODE(0, SIGKILL));
  Settle();
  EXPECT_EQ(done_, 1);
}

TEST_F(StackDumperTest, AGdbThatCannotStartLeavesWhyAndTheDumpStillEnds) {
  launcher_.FailFork("gdb", absl::NotFoundError("gdb: not found on PATH"));
  dumper_.Start({{0, 77}}, stacks_, milliseconds(10000), [this](auto) { ++done_; });
  EXPECT_EQ(done_, 0) << "never from inside Start";
  clock_.Advance(milliseconds(0));
  Settle();
  EXPECT_EQ(done_, 1);
  EXPECT_THAT(Stacks(0), HasSubstr("not found on PATH"));
}

TEST_F(StackDumperTest, ANewDumpDropsTheOneBeforeWithoutCallingIt) {
  int first_done = 0;
  dumper_.Start({{0, 10}}, stacks_, milliseconds(10000), [&](auto) { ++first_done; });
  Settle();
  Start({{0, 20}});
  EXPECT_EQ(launcher_.SignalsWhileRunning(1000, SIGKILL), 1);
  launcher_.Exit(1000, W_EXITCODE(0, SIGKILL));
  Settle();
  EXPECT_EQ(done_, 0) << "the dropped gdb's exit is not the new dump's end";
  launcher_.Exit(1001, W_EXITCODE(0, 0));
  Settle();
  EXPECT_EQ(done_, 1);
  EXPECT_EQ(first_done, 0);
}

TEST_F(StackDumperTest, APythonRanksStacksComeFromPySpyWithTheFrameItIsStuckIn) {
  python_ = {4242};
  Start({{1, 4242}});
  EXPECT_THAT(launcher_.options(1000).argv,
              ElementsAre(py_spy_, "dump", "--pid", "4242", "--full-filenames"));
  launcher_.Write(1000, Fixture("plain_stall.py-spy.txt"));
  launcher_.Exit(1000, W_EXITCODE(0, 0));
  Settle();
  ASSERT_EQ(done_, 1);
  ASSERT_EQ(results_.size(), 1u);
  EXPECT_EQ(results_[0].source, "py-spy");
  ASSERT_TRUE(results_[0].stuck_at.has_value());
  EXPECT_EQ(DescribeFrame(*results_[0].stuck_at), "wait_for_data (/home/user/project/stall.py:4)");
  EXPECT_THAT(Stacks(1), HasSubstr("Python stacks of every thread, from py-spy"));
  EXPECT_THAT(Stacks(1), HasSubstr("# stuck in wait_for_data (/home/user/project/stall.py:4)"));
  EXPECT_THAT(Stacks(1), HasSubstr("    train_step (/home/user/project/stall.py:7)"));
  const v1::RankStacks up = RankStacksOf(results_[0], dir_.path());
  EXPECT_EQ(up.path(), "stacks/rank-1.txt");
  EXPECT_EQ(up.stuck_at().function(), "wait_for_data");
  EXPECT_EQ(up.stuck_at().line(), 4);
}

TEST_F(StackDumperTest, APySpyThatFailsLeavesWhyAndGdbTakesTheStacks) {
  python_ = {4242};
  Start({{1, 4242}});
  launcher_.Write(1000, "Error: Permission denied (os error 13)\n\nStack backtrace:\n   9: main\n", true);
  launcher_.Exit(1000, W_EXITCODE(1, 0));
  Settle();
  EXPECT_EQ(done_, 0);
  EXPECT_EQ(launcher_.options(1001).argv[0], "gdb");
  launcher_.Write(1001, "Thread 1 (LWP 4242):\n#0 poll ()\n");
  launcher_.Exit(1001, W_EXITCODE(0, 0));
  Settle();
  ASSERT_EQ(done_, 1);
  EXPECT_EQ(results_[0].source, "gdb");
  EXPECT_FALSE(results_[0].stuck_at.has_value());
  EXPECT_THAT(Stacks(1), HasSubstr("native stacks of every thread, from gdb"));
  EXPECT_THAT(Stacks(1), HasSubstr("# py-spy dump --pid 4242: exit code 1: Error: Permission denied"));
  EXPECT_THAT(Stacks(1), HasSubstr("#0 poll ()"));
}

TEST_F(StackDumperTest, APySpyPastItsShareOfTheBudgetIsKilledAndGdbHasTheRest) {
  python_ = {4242};
  Start({{1, 4242}}, 10000);
  clock_.Advance(milliseconds(3999));
  Settle();
  EXPECT_EQ(launcher_.SignalsWhileRunning(1000, SIGKILL), 0);
  clock_.Advance(milliseconds(1));
  Settle();
  EXPECT_EQ(launcher_.SignalsWhileRunning(1000, SIGKILL), 1);
  EXPECT_EQ(launcher_.options(1001).argv[0], "gdb");
  // The killed py-spy's last words and exit belong to no source.
  launcher_.Write(1000, "late\n");
  launcher_.Exit(1000, W_EXITCODE(0, SIGKILL));
  Settle();
  EXPECT_EQ(done_, 0);
  clock_.Advance(milliseconds(6000));
  Settle();
  ASSERT_EQ(done_, 1) << "gdb had the rest of the budget, no more";
  EXPECT_THAT(Stacks(1), HasSubstr("py-spy: no answer within 4.0 s"));
  EXPECT_THAT(Stacks(1), HasSubstr("gdb -p 4242: no time left (killed)"));
  EXPECT_THAT(Stacks(1), Not(HasSubstr("late")));
}

TEST_F(StackDumperTest, AStoppedRankIsReadWithoutPausingIt) {
  // py-spy cannot pause a process that SIGSTOP stopped already ("Failed to suspend process").
  python_ = {4242, 4343};
  stopped_ = {4343};
  Start({{1, 4242}, {2, 4343}});
  EXPECT_THAT(launcher_.options(1000).argv, Not(Contains("--nonblocking")));
  EXPECT_THAT(launcher_.options(1001).argv,
              ElementsAre(py_spy_, "dump", "--pid", "4343", "--full-filenames", "--nonblocking"));
}

TEST_F(StackDumperTest, WithoutPySpyAPythonRankGetsGdbAndTheFileSaysWhy) {
  python_ = {4242};
  py_spy_.clear();
  Start({{1, 4242}});
  EXPECT_EQ(launcher_.options(1000).argv[0], "gdb");
  launcher_.Exit(1000, W_EXITCODE(0, 0));
  Settle();
  ASSERT_EQ(done_, 1);
  EXPECT_THAT(Stacks(1), HasSubstr("# py-spy: py-spy is not on PATH"));
}

}  // namespace
}  // namespace dlaunch
