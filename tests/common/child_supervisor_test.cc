// ChildSupervisor with a fake process launcher and a manual clock: the stop escalation, the
// output linger and the exit reports, with no process started and no sleeping.
#include "common/child_supervisor.h"

#include <signal.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_agent_clock.h"
#include "tests/testing/fake_process_launcher.h"

namespace dlaunch {
namespace {

using std::chrono::milliseconds;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

class ChildSupervisorTest : public ::testing::Test {
 protected:
  ChildSupervisorTest()
      : supervisor_(io_, "", 3,
                    ChildSupervisor::Callbacks{
                        [this](int rank, bool is_stderr, std::vector<std::string> lines) {
                          for (auto& l : lines) output_.push_back(absl::StrCat(rank, is_stderr ? "e:" : ":", l));
                        },
                        [this](const ChildExit& e) { exits_.push_back(e); }},
                    "rank-", ChildSupervisor::Seams{&launcher_, &clock_}) {}

  // Starts `n` children (ranks 0..n-1) and returns their pids.
  std::vector<pid_t> Start(int n) {
    std::vector<ChildSupervisor::StartRequest> requests;
    for (int i = 0; i < n; ++i) {
      ChildSupervisor::StartRequest r;
      r.rank = r.local_rank = i;
      r.options.argv = {"train", std::to_string(i)};
      requests.push_back(std::move(r));
    }
    std::vector<pid_t> pids;
    for (auto& result : supervisor_.StartAll(std::move(requests))) {
      EXPECT_TRUE(result.ok()) << result.status();
      if (result.ok()) pids.push_back(*result);
    }
    Settle();
    return pids;
  }

  // Runs every handler that is ready (pipe reads, posted work) without blocking.
  void Settle() {
    for (int i = 0; i < 10; ++i) {
      io_.restart();
      if (io_.poll() == 0) return;
    }
  }

  boost::asio::io_context io_;
  FakeProcessLauncher launcher_;
  ManualTimerClock clock_;
  std::vector<std::string> output_;
  std::vector<ChildExit> exits_;
  ChildSupervisor supervisor_;
};

TEST_F(ChildSupervisorTest, StartAllSpawnsEachChildInItsOwnCapturedProcessGroup) {
  std::vector<pid_t> pids = Start(2);
  ASSERT_EQ(pids.size(), 2u);
  EXPECT_EQ(supervisor_.running(), 2);
  for (pid_t pid : pids) {
    EXPECT_TRUE(launcher_.options(pid).new_process_group);
    EXPECT_TRUE(launcher_.options(pid).capture_output);
  }
  EXPECT_THAT(launcher_.options(pids[1]).argv, ElementsAre("train", "1"));
}

TEST_F(ChildSupervisorTest, AChildThatCannotStartIsReportedInItsSlotAndTheOthersRun) {
  launcher_.FailExec("missing", absl::PermissionDeniedError("cannot execute 'missing'"));
  std::vector<ChildSupervisor::StartRequest> requests(3);
  for (int i = 0; i < 3; ++i) {
    requests[i].rank = i;
    requests[i].options.argv = {i == 1 ? "missing" : "train"};
  }
  auto results = supervisor_.StartAll(std::move(requests));
  ASSERT_EQ(results.size(), 3u);
  EXPECT_TRUE(results[0].ok());
  EXPECT_EQ(results[1].status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(results[2].ok());
  EXPECT_EQ(supervisor_.running(), 2);
}

TEST_F(ChildSupervisorTest, AForkFailureIsReportedInItsSlot) {
  launcher_.FailFork("big", absl::ResourceExhaustedError("fork: out of memory"));
  std::vector<ChildSupervisor::StartRequest> requests(2);
  requests[0].options.argv = {"big"};
  requests[1].options.argv = {"train"};
  auto results = supervisor_.StartAll(std::move(requests));
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(results[1].ok());
}

TEST(ChildSupervisorLogTest, ALogFileThatCannotBeOpenedFailsThatChildWithItsErrnoCode) {
  boost::asio::io_context io;
  FakeProcessLauncher launcher;
  ManualTimerClock clock;
  ChildSupervisor supervisor(io, "/nonexistent/dlaunch-test-logs", 3, {}, "rank-",
                             ChildSupervisor::Seams{&launcher, &clock});
  std::vector<ChildSupervisor::StartRequest> requests(1);
  requests[0].rank = 4;
  requests[0].options.argv = {"train"};
  auto results = supervisor.StartAll(std::move(requests));
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].status().code(), absl::StatusCode::kNotFound) << results[0].status();
  EXPECT_NE(results[0].status().message().find("/nonexistent/dlaunch-test-logs/rank-4.log"),
            std::string::npos);
  EXPECT_EQ(supervisor.running(), 0);
}

TEST_F(ChildSupervisorTest, OutputIsSplitIntoLinesPerStream) {
  pid_t pid = Start(1)[0];
  launcher_.Write(pid, "hello\nwor");
  launcher_.Write(pid, "oops\n", /*to_stderr=*/true);
  Settle();
  launcher_.Write(pid, "ld\n");
  Settle();
  EXPECT_THAT(output_, ElementsAre("0:hello", "0e:oops", "0:world"));
}

TEST_F(ChildSupervisorTest, OutputWithoutANewlineIsCutIntoBoundedLines) {
  pid_t pid = Start(1)[0];
  const std::string chunk(32 * 1024, 'x');
  for (int i = 0; i < 3; ++i) {
    launcher_.Write(pid, chunk);
    Settle();
  }
  ASSERT_EQ(output_.size(), 1u);
  EXPECT_EQ(output_[0].size(), 2 + ChildSupervisor::kMaxLineBytes);  // "0:" and the cut line
  launcher_.Write(pid, "\n");
  Settle();
  ASSERT_EQ(output_.size(), 2u);
  EXPECT_EQ(output_[1].size(), 2 + 3 * chunk.size() - ChildSupervisor::kMaxLineBytes);
}

// The child `pid` writes `output` and exits 0; the supervisor handles both and the linger.
void WriteThenExit(boost::asio::io_context& io, FakeProcessLauncher& launcher,
                   ManualTimerClock& clock, pid_t pid, const std::string& output) {
  auto settle = [&io] {
    for (int i = 0; i < 10; ++i) {
      io.restart();
      io.poll();
    }
  };
  launcher.Write(pid, output);
  settle();
  launcher.Exit(pid, W_EXITCODE(0, 0));
  clock.Advance(milliseconds(60000));
  settle();
}

// The log of a child that wrote `output` and exited, kept to `limit` bytes.
std::string LogOfAFlood(const std::string& output, int64_t limit) {
  char dir_template[] = "/tmp/dlaunch-log-limit-XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  boost::asio::io_context io;
  FakeProcessLauncher launcher;
  ManualTimerClock clock;
  ChildSupervisor supervisor(io, dir, 3, {}, "rank-", ChildSupervisor::Seams{&launcher, &clock});
  supervisor.SetLogLimit(limit);
  std::vector<ChildSupervisor::StartRequest> requests(1);
  requests[0].rank = 0;
  requests[0].options.argv = {"flood"};
  auto results = supervisor.StartAll(std::move(requests));
  EXPECT_TRUE(results[0].ok());
  WriteThenExit(io, launcher, clock, *results[0], output);
  std::ifstream in(dir + "/rank-0.log");
  const std::string log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove_all(dir);
  return log;
}

TEST(ChildSupervisorLogTest, ALogPastItsLimitKeepsTheStartAndSaysHowMuchWasNotKept) {
  std::string flood;
  for (int i = 0; i < 50; ++i) flood += "line\n";  // 250 bytes
  const std::string log = LogOfAFlood(flood, 100);
  EXPECT_EQ(log.substr(0, 100), flood.substr(0, 100));
  EXPECT_EQ(log.substr(100),
            "[dlaunch] this log keeps the first 100 bytes of output; 150 more bytes were not kept\n");
}

TEST(ChildSupervisorLogTest, TheClosingNoteStartsALineWhenTheLimitFellInsideOne) {
  std::string flood;
  for (int i = 0; i < 50; ++i) flood += "line\n";
  const std::string log = LogOfAFlood(flood, 102);
  EXPECT_EQ(log.substr(0, 102), flood.substr(0, 102));
  EXPECT_EQ(log.substr(102),
            "\n[dlaunch] this log keeps the first 102 bytes of output; 148 more bytes were not "
            "kept\n");
}

// A full disk (/dev/full as the rank's log): what could not be written is counted and said as
// the rank's last line of output, which the live view and a failure's tail show.
TEST(ChildSupervisorLogTest, OutputTheLogCouldNotTakeIsCountedAndSaidAsTheLastLine) {
  char dir_template[] = "/tmp/dlaunch-log-full-XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  ASSERT_EQ(symlink("/dev/full", (dir + "/rank-0.log").c_str()), 0);
  boost::asio::io_context io;
  FakeProcessLauncher launcher;
  ManualTimerClock clock;
  std::vector<std::string> lines;
  std::vector<std::string> tail;
  ChildSupervisor::Callbacks callbacks;
  callbacks.on_output = [&](int, bool, std::vector<std::string> l) {
    lines.insert(lines.end(), l.begin(), l.end());
  };
  callbacks.on_exit = [&](const ChildExit& e) { tail = e.tail; };
  ChildSupervisor supervisor(io, dir, 3, callbacks, "rank-", ChildSupervisor::Seams{&launcher, &clock});
  std::vector<ChildSupervisor::StartRequest> requests(1);
  requests[0].rank = 0;
  requests[0].options.argv = {"writer"};
  auto results = supervisor.StartAll(std::move(requests));
  ASSERT_TRUE(results[0].ok()) << results[0].status();
  WriteThenExit(io, launcher, clock, *results[0], "one\ntwo\n");
  std::filesystem::remove_all(dir);
  const std::string note =
      "[dlaunch] 8 bytes of this rank's output could not be written to its log: No space left on "
      "device";
  EXPECT_THAT(lines, ElementsAre("one", "two", note));
  ASSERT_FALSE(tail.empty());
  EXPECT_EQ(tail.back(), note);
}

TEST_F(ChildSupervisorTest, ExitIsReportedWithItsWaitStatusTailAndNotStopped) {
  pid_t pid = Start(1)[0];
  launcher_.Write(pid, "a\nb\nc\nd\nlast words");
  Settle();
  launcher_.Exit(pid, W_EXITCODE(3, 0));
  Settle();
  ASSERT_EQ(exits_.size(), 1u);
  EXPECT_EQ(exits_[0].pid, pid);
  EXPECT_EQ(exits_[0].rank, 0);
  EXPECT_TRUE(WIFEXITED(exits_[0].wait_status));
  EXPECT_EQ(WEXITSTATUS(exits_[0].wait_status), 3);
  EXPECT_FALSE(exits_[0].stopped);
  // The unterminated last line is flushed; the tail keeps the last 3 lines.
  EXPECT_THAT(exits_[0].tail, ElementsAre("c", "d", "last words"));
  EXPECT_EQ(supervisor_.running(), 0);
}

TEST_F(ChildSupervisorTest, StopSendsSigtermNowAndSigkillOnlyAfterTheGrace) {
  std::vector<pid_t> pids = Start(2);
  supervisor_.StopAll(milliseconds(5000));
  for (pid_t pid : pids) {
    EXPECT_EQ(launcher_.SignalsWhileRunning(pid, SIGTERM), 1);
    EXPECT_EQ(launcher_.SignalsWhileRunning(pid, SIGKILL), 0);
  }
  clock_.Advance(milliseconds(4999));
  for (pid_t pid : pids) EXPECT_EQ(launcher_.SignalsWhileRunning(pid, SIGKILL), 0);
  clock_.Advance(milliseconds(1));
  for (pid_t pid : pids) EXPECT_EQ(launcher_.SignalsWhileRunning(pid, SIGKILL), 1);

  launcher_.Exit(pids[0], W_EXITCODE(0, SIGKILL));
  Settle();
  ASSERT_EQ(exits_.size(), 1u);
  EXPECT_TRUE(exits_[0].stopped);
  EXPECT_TRUE(WIFSIGNALED(exits_[0].wait_status));
  EXPECT_EQ(WTERMSIG(exits_[0].wait_status), SIGKILL);
}

// A stopped child (SIGSTOP) would hold the SIGTERM pending and only die of the SIGKILL: the
// stop continues it right after the SIGTERM, in its group and itself.
TEST_F(ChildSupervisorTest, StopContinuesAStoppedChildAfterItsSigterm) {
  pid_t pid = Start(1)[0];
  supervisor_.StopAll(milliseconds(5000));
  EXPECT_EQ(launcher_.SignalsWhileRunning(pid, SIGCONT), 1);
  ASSERT_GE(launcher_.child_signals().size(), 2u);
  EXPECT_EQ(launcher_.child_signals()[0].sig, SIGTERM);
  EXPECT_EQ(launcher_.child_signals()[1].sig, SIGCONT);
  supervisor_.StopAll(milliseconds(5000));  // a second stop sends neither again
  EXPECT_EQ(launcher_.SignalsWhileRunning(pid, SIGCONT), 1);
}

TEST_F(ChildSupervisorTest, AChildThatExitsWithinTheGraceGetsNoSigkill) {
  pid_t pid = Start(1)[0];
  supervisor_.StopAll(milliseconds(5000));
  clock_.Advance(milliseconds(1000));
  launcher_.Exit(pid, W_EXITCODE(0, SIGTERM));
  Settle();
  ASSERT_EQ(exits_.size(), 1u);
  EXPECT_TRUE(exits_[0].stopped);
  clock_.Advance(milliseconds(10000));
  EXPECT_EQ(launcher_.SignalsWhileRunning(pid, SIGKILL), 0);
  EXPECT_EQ(clock_.pending(), 0);  // neither the kill nor the linger timer is left behind
}

TEST_F(ChildSupervisorTest, ASecondStopNeitherResendsSigtermNorPushesTheKillLater) {
  pid_t pid = Start(1)[0];
  supervisor_.StopAll(milliseconds(3000));
  clock_.Advance(milliseconds(2000));
  supervisor_.StopAll(milliseconds(3000));  // would kill at t+5000 if it re-armed
  EXPECT_EQ(launcher_.SignalsWhileRunning(pid, SIGTERM), 1);
  clock_.Advance(milliseconds(1000));
  EXPECT_EQ(launcher_.SignalsWhileRunning(pid, SIGKILL), 1);
}

TEST_F(ChildSupervisorTest, AShorterSecondStopBringsTheKillForward) {
  pid_t pid = Start(1)[0];
  supervisor_.StopAll(milliseconds(30000));
  supervisor_.StopAll(milliseconds(500));
  clock_.Advance(milliseconds(499));
  EXPECT_EQ(launcher_.SignalsWhileRunning(pid, SIGKILL), 0);
  clock_.Advance(milliseconds(1));
  EXPECT_EQ(launcher_.SignalsWhileRunning(pid, SIGKILL), 1);
}

TEST_F(ChildSupervisorTest, KillAllSignalsAtOnceAndMarksTheChildrenStopped) {
  pid_t pid = Start(1)[0];
  supervisor_.KillAll();
  EXPECT_EQ(launcher_.SignalsWhileRunning(pid, SIGKILL), 1);
  launcher_.Exit(pid, W_EXITCODE(0, SIGKILL));
  Settle();
  ASSERT_EQ(exits_.size(), 1u);
  EXPECT_TRUE(exits_[0].stopped);
}

TEST_F(ChildSupervisorTest, AStopWithNoGraceKillsAtOnceWithoutSigterm) {
  pid_t pid = Start(1)[0];
  supervisor_.StopAll(milliseconds(0));
  EXPECT_EQ(launcher_.SignalsWhileRunning(pid, SIGTERM), 0);
  EXPECT_EQ(launcher_.SignalsWhileRunning(pid, SIGKILL), 1);
  EXPECT_EQ(clock_.pending(), 0);
}

TEST_F(ChildSupervisorTest, AKillDuringTheGraceKillsNowAndTheDeadlineSendsNothingMore) {
  pid_t pid = Start(1)[0];
  supervisor_.StopAll(milliseconds(5000));
  clock_.Advance(milliseconds(100));
  supervisor_.KillAll();
  EXPECT_EQ(launcher_.SignalsWhileRunning(pid, SIGKILL), 1);
  clock_.Advance(milliseconds(5000));
  EXPECT_EQ(launcher_.SignalsWhileRunning(pid, SIGKILL), 1);
  EXPECT_EQ(launcher_.SignalsWhileRunning(pid, SIGTERM), 1);
}

// A child that moved to another process group (setpgid) is not reached through its own group:
// each stop signal also goes to the child itself, and never after it was reaped.
TEST_F(ChildSupervisorTest, StopSignalsReachTheChildItselfNotOnlyItsGroup) {
  pid_t pid = Start(1)[0];
  supervisor_.StopAll(milliseconds(1000));
  clock_.Advance(milliseconds(1000));
  ASSERT_EQ(launcher_.child_signals().size(), 3u);
  EXPECT_EQ(launcher_.child_signals()[0].pgid, pid);
  EXPECT_EQ(launcher_.child_signals()[0].sig, SIGTERM);
  EXPECT_EQ(launcher_.child_signals()[1].sig, SIGCONT);
  EXPECT_EQ(launcher_.child_signals()[2].sig, SIGKILL);
  EXPECT_TRUE(launcher_.child_signals()[2].while_running);
  launcher_.Exit(pid, W_EXITCODE(0, SIGKILL));
  Settle();
  supervisor_.KillAll();
  EXPECT_EQ(launcher_.child_signals().size(), 3u);  // nothing to the reaped child
}

TEST_F(ChildSupervisorTest, AfterExitTheGroupIsKilledToCloseWhatHelpersStillHold) {
  pid_t pid = Start(1)[0];
  launcher_.Exit(pid, W_EXITCODE(0, 0));
  Settle();
  ASSERT_FALSE(launcher_.signals().empty());
  EXPECT_EQ(launcher_.signals().back().pgid, pid);
  EXPECT_EQ(launcher_.signals().back().sig, SIGKILL);
  EXPECT_FALSE(launcher_.signals().back().while_running);
}

TEST_F(ChildSupervisorTest, TheExitWaitsForOutputButTheLingerIsBounded) {
  pid_t pid = Start(1)[0];
  // A grandchild keeps the pipes open after the child itself exited.
  launcher_.Exit(pid, W_EXITCODE(0, 0), /*close_output=*/false);
  Settle();
  launcher_.Write(pid, "late line\n");
  Settle();
  clock_.Advance(ChildSupervisor::kOutputLinger - milliseconds(1));
  Settle();
  EXPECT_THAT(exits_, IsEmpty());
  EXPECT_EQ(supervisor_.running(), 1);
  clock_.Advance(milliseconds(1));
  ASSERT_EQ(exits_.size(), 1u);
  EXPECT_THAT(exits_[0].tail, ElementsAre("late line"));
  EXPECT_EQ(supervisor_.running(), 0);
}

TEST_F(ChildSupervisorTest, OutputWrittenJustBeforeExitIsNotLost) {
  pid_t pid = Start(1)[0];
  launcher_.Write(pid, "final\n");
  launcher_.Exit(pid, W_EXITCODE(1, 0));
  Settle();
  ASSERT_EQ(exits_.size(), 1u);
  EXPECT_THAT(exits_[0].tail, ElementsAre("final"));
  EXPECT_THAT(output_, ElementsAre("0:final"));
}

TEST_F(ChildSupervisorTest, StopWithNothingRunningDoesNothing) {
  supervisor_.StopAll(milliseconds(100));
  EXPECT_EQ(clock_.pending(), 0);
  EXPECT_THAT(launcher_.signals(), IsEmpty());
}

}  // namespace
}  // namespace dlaunch
