// Warm starts with real processes: a warm process in Debian's Python with torch (1.13) imported
// forks ranks that see what a plain spawn's ranks see (argv, environment, working directory),
// whose exits reach the supervisor, that a stop ends with what they started, and that are this
// process's children (it is their subreaper, as the agent is). Skipped where /usr/bin/python3
// cannot import torch.
#include "agent/workers/warm_start.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agent/workers/orphan_sweeper.h"
#include "common/child_supervisor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/wait_for.h"

namespace dlaunch {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr char kPython[] = "/usr/bin/python3";

// Prints what a rank sees, one "key=value" line each, then exits with its first argument.
constexpr char kScript[] = R"(import os, sys
import torch
import torch.distributed as dist
print("argv=" + repr(sys.argv))
print("env=" + repr(sorted(os.environ.items())))
print("cwd=" + os.getcwd())
print("path0=" + sys.path[0])
print("name=" + __name__)
print("ppid=" + str(os.getppid()))
print("pgid=" + str(os.getpgid(0) == os.getpid()))
print("torch=" + torch.__version__ + " " + str(torch.cuda.is_initialized()))
sys.stdout.flush()
if sys.argv[1] == "raise":
    raise RuntimeError("boom")
if sys.argv[1] == "sleep":
    import subprocess
    child = subprocess.Popen(["sleep", "300"])
    print("child=" + str(child.pid), flush=True)
    import time
    time.sleep(300)
sys.exit(int(sys.argv[1]))
)";

std::string ReadStat(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string s;
  std::getline(in, s);
  return s;
}

bool PythonHasTorch() {
  return system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") == 0;
}

class WarmStartTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!PythonHasTorch()) GTEST_SKIP() << "/usr/bin/python3 cannot import torch";
    // The forked ranks are handed to this process, as to the agent.
    ASSERT_TRUE(BecomeSubreaper());
    char tmpl[] = "/tmp/warm-start-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    std::ofstream(dir_ + "/train.py") << kScript;
    launcher_ = std::make_unique<WarmProcessLauncher>(io_, [this] { return zygote_.get(); });
    supervisor_ = std::make_unique<ChildSupervisor>(
        io_, "", 50,
        ChildSupervisor::Callbacks{
            [this](int rank, bool err, std::vector<std::string> lines) {
              for (auto& l : lines) output_[rank] += l + "\n";
            },
            [this](const ChildExit& e) { exits_[e.rank] = e; }},
        "rank-", ChildSupervisor::Seams{launcher_.get(), nullptr});
  }

  void TearDown() override {
    supervisor_.reset();
    zygote_.reset();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  SpawnOptions Options(const std::string& arg) const {
    SpawnOptions o;
    o.argv = {kPython, "-u", "train.py", arg};
    o.envp = {"PATH=/usr/bin:/bin", "LANG=C.UTF-8", "RANK=3", "ODD=a=b c",
              absl::StrCat("TMPDIR=", dir_)};
    o.workdir = dir_;
    o.traceable_by_parent = true;
    return o;
  }

  void StartWarmProcess() {
    SpawnOptions node = Options("0");
    node.envp.push_back("ZYGOTE_ONLY=1");  // a rank must not see the warm process's environment
    auto z = Zygote::Start(node);
    ASSERT_TRUE(z.ok()) << z.status();
    zygote_ = *std::move(z);
    // Warm once it accepts: torch's import takes seconds on a loaded machine.
    ASSERT_TRUE(WaitFor([&] { return Probe(); }, milliseconds(120000)))
        << "the warm process never became warm";
  }

  // True once the warm process accepts a start (the probe rank is run to its end here).
  bool Probe() {
    auto p = zygote_->TryFork(Options("0"));
    if (!p.ok()) {
      EXPECT_EQ(p.status().code(), absl::StatusCode::kUnavailable) << p.status();
      return false;
    }
    close(p->stdout_fd);
    close(p->stderr_fd);
    int status = 0;
    EXPECT_EQ(WaitChild(p->pid, &status, 0), p->pid);  // this process's own child
    return true;
  }

  // Starts rank `rank` with `arg`; returns its pid.
  pid_t Start(int rank, const std::string& arg) {
    ChildSupervisor::StartRequest r;
    r.rank = r.local_rank = rank;
    r.options = Options(arg);
    auto started = supervisor_->StartAll({r});
    EXPECT_TRUE(started[0].ok()) << started[0].status();
    return started[0].ok() ? *started[0] : -1;
  }

  bool RunUntil(const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (!done() && std::chrono::steady_clock::now() < deadline) {
      io_.restart();
      io_.run_one_for(milliseconds(50));
    }
    return done();
  }

  std::map<std::string, std::string> Seen(int rank) {
    std::map<std::string, std::string> seen;
    for (absl::string_view line : absl::StrSplit(output_[rank], '\n')) {
      std::pair<std::string, std::string> kv = absl::StrSplit(line, absl::MaxSplits('=', 1));
      if (!kv.first.empty()) seen[kv.first] = kv.second;
    }
    return seen;
  }

  boost::asio::io_context io_;
  std::string dir_;
  std::unique_ptr<Zygote> zygote_;
  std::unique_ptr<WarmProcessLauncher> launcher_;
  std::unique_ptr<ChildSupervisor> supervisor_;
  std::map<int, std::string> output_;
  std::map<int, ChildExit> exits_;
};

TEST_F(WarmStartTest, AWarmRankSeesWhatAPlainSpawnSeesAndItsExitCodeArrives) {
  const pid_t cold = Start(0, "7");  // no warm process yet: a plain spawn
  EXPECT_THAT(launcher_->TakePath(cold), StartsWith("cold: no warm process"));
  StartWarmProcess();
  const pid_t warm = Start(1, "7");
  EXPECT_EQ(launcher_->TakePath(warm), "warm");
  ASSERT_TRUE(RunUntil([&] { return exits_.size() == 2; }));
  for (int rank : {0, 1}) {
    ASSERT_TRUE(WIFEXITED(exits_[rank].wait_status)) << rank;
    EXPECT_EQ(WEXITSTATUS(exits_[rank].wait_status), 7) << output_[rank];
  }
  std::map<std::string, std::string> plain = Seen(0), forked = Seen(1);
  for (const char* key : {"argv", "env", "cwd", "path0", "name", "ppid", "pgid", "torch"}) {
    EXPECT_EQ(forked[key], plain[key]) << key;
  }
  EXPECT_EQ(forked["ppid"], std::to_string(getpid()));
  EXPECT_EQ(forked["pgid"], "True");
  EXPECT_THAT(forked["torch"], HasSubstr("False"));  // CUDA not initialised
  EXPECT_THAT(forked["env"], HasSubstr("('ODD', 'a=b c')"));
  EXPECT_THAT(forked["env"], ::testing::Not(HasSubstr("ZYGOTE_ONLY")));
}

TEST_F(WarmStartTest, AnUncaughtExceptionExitsOneWithItsTraceback) {
  StartWarmProcess();
  Start(0, "raise");
  ASSERT_TRUE(RunUntil([&] { return exits_.count(0) > 0; }));
  ASSERT_TRUE(WIFEXITED(exits_[0].wait_status));
  EXPECT_EQ(WEXITSTATUS(exits_[0].wait_status), 1);
  EXPECT_THAT(output_[0], HasSubstr("RuntimeError: boom"));
}

TEST_F(WarmStartTest, AKilledRankIsReportedAndTheNextStartsWarmAgain) {
  StartWarmProcess();
  const pid_t first = Start(0, "sleep");
  ASSERT_EQ(launcher_->TakePath(first), "warm");
  ASSERT_TRUE(RunUntil([&] { return output_[0].find("child=") != std::string::npos; }));
  kill(first, SIGKILL);
  ASSERT_TRUE(RunUntil([&] { return exits_.count(0) > 0; }));
  EXPECT_TRUE(WIFSIGNALED(exits_[0].wait_status));
  EXPECT_EQ(WTERMSIG(exits_[0].wait_status), SIGKILL);
  // Its own child was handed to this process (as to the agent, whose sweep ends such), and the
  // supervisor ended the rank's process group once the rank was gone.
  const pid_t child = std::stoi(Seen(0)["child"]);
  EndAdopted(milliseconds(100));
  EXPECT_NE(kill(child, 0), 0) << ReadStat(child);
  EXPECT_TRUE(AdoptedChildren().empty());
  const pid_t second = Start(1, "5");
  EXPECT_EQ(launcher_->TakePath(second), "warm");
  ASSERT_TRUE(RunUntil([&] { return exits_.count(1) > 0; }));
  EXPECT_EQ(WEXITSTATUS(exits_[1].wait_status), 5);
}

TEST_F(WarmStartTest, AStopEndsTheRankAndWhatItStartedAndTheWarmProcessGoesWithIt) {
  StartWarmProcess();
  const pid_t rank = Start(0, "sleep");
  ASSERT_TRUE(RunUntil([&] { return output_[0].find("child=") != std::string::npos; }));
  const pid_t child = std::stoi(Seen(0)["child"]);
  supervisor_->StopAll(milliseconds(2000));
  ASSERT_TRUE(RunUntil([&] { return exits_.count(0) > 0; }));
  EXPECT_TRUE(exits_[0].stopped);
  EXPECT_NE(kill(rank, 0), 0);
  // The sleep was in the rank's process group: the stop's SIGTERM reached it too.
  EXPECT_TRUE(WaitFor([&] { return EndAdopted(milliseconds(0)).empty() && kill(child, 0) != 0; },
                      milliseconds(5000)));
  const pid_t warm = zygote_->pid();
  zygote_.reset();
  EXPECT_NE(kill(warm, 0), 0);
  EXPECT_TRUE(AdoptedChildren().empty());
}

TEST_F(WarmStartTest, WithoutAWarmProcessRanksStartCold) {
  SpawnOptions o = Options("0");
  o.argv = {kPython, "-c", "pass"};
  EXPECT_FALSE(WarmStartable(o.argv));
  EXPECT_FALSE(Zygote::Start(o).ok());
  EXPECT_TRUE(WarmStartable(Options("0").argv));
}

}  // namespace
}  // namespace dlaunch
