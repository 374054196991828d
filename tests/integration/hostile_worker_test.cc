// Workers that try to outlive the job: a daemon made with a double fork and setsid() leaves the
// worker's process group and session, so a stop of the group does not reach it. The agent is
// the workers' child subreaper and ends such daemons once the round's workers have ended: on
// success, on failure and on Ctrl-C alike.
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "tests/integration/test_process.h"

namespace dlaunch::testing {
namespace {

using std::chrono::seconds;

const std::string kBin = DLAUNCH_BIN_DIR;

// Each rank starts a daemon (double fork, setsid) that writes its pid to <pidfile>.<rank> and
// sleeps; then the rank exits with `exit_code`, or sleeps until stopped when it is negative.
constexpr char kDaemonWorker[] = R"(import os, sys, time
pidfile, code = sys.argv[1] + "." + os.environ["RANK"], int(sys.argv[2])
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        with open(pidfile + ".tmp", "w") as f:
            f.write(str(os.getpid()))
        os.rename(pidfile + ".tmp", pidfile)
        time.sleep(600)
        os._exit(0)
    os._exit(0)
while not os.path.exists(pidfile):
    time.sleep(0.01)
print("daemon started", flush=True)
if code < 0:
    time.sleep(600)
sys.exit(code)
)";

class HostileWorkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_ = MakeTempDir();
    std::ofstream(tmp_ + "/worker.py") << kDaemonWorker;
  }
  void TearDown() override {
    for (pid_t pid : DaemonPids()) kill(pid, SIGKILL);
    std::filesystem::remove_all(tmp_);
  }

  std::unique_ptr<ChildProcess> Start(int exit_code) {
    return std::make_unique<ChildProcess>(
        std::vector<std::string>{kBin + "/dlaunch", "run", "--nnodes", "2", "--job-root",
                                 tmp_ + "/runs", "--grace", "2", "--", "python3",
                                 tmp_ + "/worker.py", tmp_ + "/daemon",
                                 std::to_string(exit_code)},
        tmp_);
  }

  // The daemons' pids, as far as they wrote them.
  std::vector<pid_t> DaemonPids() const {
    std::vector<pid_t> pids;
    for (int rank = 0; rank < 2; ++rank) {
      pid_t pid = 0;
      if (absl::SimpleAtoi(ReadFile(absl::StrCat(tmp_, "/daemon.", rank)), &pid)) pids.push_back(pid);
    }
    return pids;
  }

  static bool Alive(pid_t pid) {
    // A zombie is gone for this purpose: it holds nothing but its pid.
    const std::string stat = ReadFile(absl::StrCat("/proc/", pid, "/stat"));
    return !stat.empty() && !absl::StrContains(stat.substr(stat.rfind(')')), ") Z");
  }

  void ExpectDaemonsGone() {
    std::vector<pid_t> pids = DaemonPids();
    ASSERT_EQ(pids.size(), 2u) << "the daemons never started";
    for (pid_t pid : pids) EXPECT_FALSE(Alive(pid)) << "daemon " << pid << " outlived the job";
  }

  std::string tmp_;
};

TEST_F(HostileWorkerTest, ADaemonOfASucceedingWorkerEndsWithTheJob) {
  auto run = Start(0);
  ASSERT_EQ(run->Wait(seconds(60)), 0) << run->Stdout() << run->Stderr();
  ExpectDaemonsGone();
}

TEST_F(HostileWorkerTest, ADaemonOfAFailingWorkerEndsWithTheJob) {
  auto run = Start(3);
  ASSERT_EQ(run->Wait(seconds(60)), 1) << run->Stdout() << run->Stderr();
  ExpectDaemonsGone();
}

TEST_F(HostileWorkerTest, ADaemonEndsWhenTheJobIsInterrupted) {
  auto run = Start(-1);
  ASSERT_TRUE(WaitFor([&] { return DaemonPids().size() == 2; }, std::chrono::seconds(60)))
      << run->Stdout() << run->Stderr();
  ASSERT_TRUE(WaitFor([&] { return absl::StrContains(run->Stdout(), "daemon started"); },
                      std::chrono::seconds(30)));
  run->Signal(SIGINT);
  ASSERT_EQ(run->Wait(seconds(60)), 130) << run->Stdout() << run->Stderr();
  ExpectDaemonsGone();
}

// 64 MB in one line without a newline: before, the agent forwarded it as one message, which
// the launcher refused as too large, and the job failed as "agent lost" minutes later.
TEST_F(HostileWorkerTest, AWorkerThatFloodsOneHugeLineFinishesAndItsLogKeepsIt) {
  ChildProcess run({kBin + "/dlaunch", "run", "--nnodes", "1", "--job-dir", tmp_ + "/job", "--",
                    "python3", "-c",
                    "import sys; sys.stdout.write('x' * (64 << 20)); sys.stdout.flush()"},
                   tmp_);
  ASSERT_EQ(run.Wait(seconds(120)), 0) << run.Stderr();
  EXPECT_TRUE(absl::StrContains(run.Stdout(), "more bytes in logs/rank-0.log]"));
  EXPECT_EQ(std::filesystem::file_size(tmp_ + "/job/logs/rank-0.log"), (64u << 20) + 1);
}

}  // namespace
}  // namespace dlaunch::testing
