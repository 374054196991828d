// StackDumper with a fake process launcher and a manual clock: one gdb per hung rank, the
// files it leaves, and the budget that bounds the whole dump, with no process and no sleeping.
#include "agent/stack_dumper.h"

#include <signal.h>
#include <sys/wait.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_agent_clock.h"
#include "tests/testing/fake_process_launcher.h"
#include "tests/testing/test_files.h"

namespace dlaunch {
namespace {

using std::chrono::milliseconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class StackDumperTest : public ::testing::Test {
 protected:
  StackDumperTest()
      : dumper_(io_, clock_, [this](const std::string& l) { log_.push_back(l); },
                SupervisorSeams{&launcher_, &clock_}) {}

  void Settle() {
    for (int i = 0; i < 10; ++i) {
      io_.restart();
      if (io_.poll() == 0) return;
    }
  }
  void Start(const std::vector<StackDumper::Target>& targets, int budget_ms = 10000) {
    dumper_.Start(targets, stacks_, milliseconds(budget_ms), [this] { ++done_; });
    Settle();
  }
  std::string Stacks(int rank) const {
    return ReadFile(stacks_ + "/rank-" + std::to_string(rank) + ".txt");
  }

  boost::asio::io_context io_;
  FakeProcessLauncher launcher_;
  ManualTimerClock clock_;
  ScratchDir dir_;
  std::string stacks_ = dir_.path() + "/stacks";
  std::vector<std::string> log_;
  int done_ = 0;
  StackDumper dumper_;
};

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
  dumper_.Start({{0, 77}}, stacks_, milliseconds(10000), [this] { ++done_; });
  EXPECT_EQ(done_, 0) << "never from inside Start";
  clock_.Advance(milliseconds(0));
  Settle();
  EXPECT_EQ(done_, 1);
  EXPECT_THAT(Stacks(0), HasSubstr("not found on PATH"));
}

TEST_F(StackDumperTest, ANewDumpDropsTheOneBeforeWithoutCallingIt) {
  int first_done = 0;
  dumper_.Start({{0, 10}}, stacks_, milliseconds(10000), [&] { ++first_done; });
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

}  // namespace
}  // namespace dlaunch
