// OrphanSweeper for real: this test process becomes a child subreaper, a forked daemon deaf to
// SIGTERM is handed to it, and the sweep runs on a real io_context with a ticker beside it. The
// sweep returns at once, the loop keeps ticking through the grace, the daemon dies of the
// SIGKILL at the deadline, and `done` runs after; a fenced sweep asked meanwhile hurries it.
#include "agent/workers/orphan_sweeper.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include <boost/asio.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/clock.h"
#include "common/file_io.h"
#include "gtest/gtest.h"
#include "tests/testing/wait_for.h"

namespace dlaunch {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

bool Alive(pid_t pid) {
  absl::StatusOr<std::string> stat = ReadFile(absl::StrCat("/proc/", pid, "/stat"));
  return stat.ok() && !absl::StrContains(stat->substr(stat->rfind(')')), ") Z");
}

bool Adopted(pid_t pid) {
  for (pid_t p : AdoptedChildren()) {
    if (p == pid) return true;
  }
  return false;
}

// A daemon deaf to SIGTERM in a session of its own, whose parent has exited: adopted by this
// process (a subreaper). Its pid, or -1.
pid_t StartDeafOrphan() {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  const pid_t middle = fork();
  if (middle == 0) {
    setsid();
    if (fork() == 0) {
      signal(SIGTERM, SIG_IGN);
      const pid_t self = getpid();
      (void)!write(fds[1], &self, sizeof(self));
      for (;;) pause();
    }
    _exit(0);
  }
  close(fds[1]);
  int status = 0;
  waitpid(middle, &status, 0);
  pid_t daemon = -1;
  if (read(fds[0], &daemon, sizeof(daemon)) != sizeof(daemon)) daemon = -1;
  close(fds[0]);
  return daemon;
}

class OrphanSweeperProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(BecomeSubreaper());
    daemon_ = StartDeafOrphan();
    ASSERT_GT(daemon_, 0);
    ASSERT_TRUE(WaitFor([&] { return Adopted(daemon_); }, seconds(10)));
  }
  void TearDown() override {
    if (daemon_ > 0 && Alive(daemon_)) kill(daemon_, SIGKILL);
    ReapAdoptedZombies();
    prctl(PR_SET_CHILD_SUBREAPER, 0);
  }

  // Ticks every 20 ms on the loop until stopped, counting.
  void Tick() {
    clock_.RunAfter(milliseconds(20), [this] {
      ++ticks_;
      Tick();
    });
  }

  pid_t daemon_ = -1;
  boost::asio::io_context io_;
  AsioTimerClock clock_{io_};
  int ticks_ = 0;
  std::vector<std::string> log_;
};

TEST_F(OrphanSweeperProcessTest, ADeafDaemonIsKilledAtTheDeadlineWhileTheLoopGoesOn) {
  OrphanSweeper sweeper(clock_, [&](const std::string& l) { log_.push_back(l); });
  const auto started = std::chrono::steady_clock::now();
  std::chrono::steady_clock::duration took{};
  int ticks_at_done = -1;
  sweeper.Sweep(milliseconds(500), nullptr, [&] {
    took = std::chrono::steady_clock::now() - started;
    ticks_at_done = ticks_;
    io_.stop();
  });
  EXPECT_TRUE(sweeper.busy()) << "the sweep returned before the daemon ended, as it must";
  EXPECT_EQ(ticks_at_done, -1);
  Tick();
  io_.run_for(seconds(20));
  ASSERT_GE(ticks_at_done, 0) << "the sweep never ended";
  EXPECT_GE(took, milliseconds(500)) << "SIGKILL before the grace";
  // A loop held by the sweep would tick at most once before `done` (after the wait).
  EXPECT_GE(ticks_at_done, 5) << "the loop did not run during the sweep's grace";
  EXPECT_TRUE(WaitFor([&] { return !Alive(daemon_); }, seconds(5)));
  EXPECT_FALSE(Adopted(daemon_)) << "the killed daemon was not reaped";
  ASSERT_EQ(log_.size(), 1u) << absl::StrJoin(log_, "\n");
  EXPECT_TRUE(absl::StrContains(log_[0], absl::StrCat("ended 1 process(es) the workers left behind: ", daemon_)))
      << log_[0];
}

TEST_F(OrphanSweeperProcessTest, AFencedSweepHurriesTheOneRunningAndFollowsIt) {
  OrphanSweeper sweeper(clock_, [&](const std::string& l) { log_.push_back(l); });
  std::vector<int> done;
  sweeper.Sweep(seconds(60), nullptr, [&] { done.push_back(1); });
  ASSERT_TRUE(sweeper.busy());
  sweeper.Sweep(milliseconds(0), nullptr, [&] {
    done.push_back(2);
    io_.stop();
  });
  io_.run_for(seconds(20));
  // Without the hurry the first would wait its 60 s grace.
  EXPECT_EQ(done, (std::vector<int>{1, 2}));
  EXPECT_FALSE(sweeper.busy());
  EXPECT_TRUE(WaitFor([&] { return !Alive(daemon_); }, seconds(5)));
}

TEST_F(OrphanSweeperProcessTest, NothingLeftIsDoneAtOnce) {
  kill(daemon_, SIGKILL);
  ASSERT_TRUE(WaitFor([&] { return ReapAdoptedZombies() > 0 || !Adopted(daemon_); }, seconds(5)));
  OrphanSweeper sweeper(clock_, [&](const std::string& l) { log_.push_back(l); });
  bool done = false;
  sweeper.Sweep(milliseconds(500), nullptr, [&] { done = true; });
  EXPECT_TRUE(done);
  EXPECT_FALSE(sweeper.busy());
  EXPECT_TRUE(log_.empty());
}

}  // namespace
}  // namespace dlaunch
