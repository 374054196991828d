// Hostile or broken workers. Workers that try to outlive the job: a daemon made with a double
// fork and setsid() leaves the worker's process group and session, so a stop of the group does
// not reach it. The agent is the workers' child subreaper and ends such daemons once the
// round's workers have ended: on success, on failure and on Ctrl-C alike. Where the node lets
// it make a cgroup, everything left in the workers' cgroup is killed then too, which also ends
// a daemon that forks away from every signal. A worker that closes its output, or that moves
// itself to another process group, is still stopped. Garbage on the report socket and an
// output flood leave the job, the agent and the launcher working, their memory bounded.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "tests/integration/test_process.h"
#include "tests/testing/sanitizer.h"

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

// Rank 0 turns hostile and keeps running: "closed-output" closes its stdout and stderr and
// ignores SIGTERM; "new-group" moves itself into the process group of a helper it forked (so
// its own group is empty and a signal to it reaches nothing). It writes <prefix>.worker (and
// <prefix>.helper). Rank 1 waits for that, then exits 3 ("fail") or sleeps until stopped.
constexpr char kEscapingWorker[] = R"(import os, signal, sys, time
prefix, kind, ending = sys.argv[1], sys.argv[2], sys.argv[3]
def note(name, pid):
    with open(prefix + name + ".tmp", "w") as f:
        f.write(str(pid))
    os.rename(prefix + name + ".tmp", prefix + name)
if os.environ["RANK"] == "0":
    if kind == "closed-output":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        os.close(1)
        os.close(2)
    else:
        helper = os.fork()
        if helper == 0:
            try:
                os.setpgid(0, 0)
            except OSError:
                pass
            time.sleep(600)
            os._exit(0)
        os.setpgid(helper, helper)
        os.setpgid(0, helper)
        assert os.getpgid(0) == helper and os.getpgid(0) != os.getpid()
        note(".helper", helper)
    note(".worker", os.getpid())
    while True:
        time.sleep(1)
while not os.path.exists(prefix + ".worker"):
    time.sleep(0.01)
print("rank 0 turned hostile", flush=True)
if ending == "fail":
    sys.exit(3)
while True:
    time.sleep(1)
)";

class EscapingWorkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_ = MakeTempDir();
    std::ofstream(tmp_ + "/worker.py") << kEscapingWorker;
  }
  void TearDown() override {
    for (pid_t pid : Pids()) kill(pid, SIGKILL);
    std::filesystem::remove_all(tmp_);
  }

  std::unique_ptr<ChildProcess> Start(const std::string& kind, const std::string& ending) {
    return std::make_unique<ChildProcess>(
        std::vector<std::string>{kBin + "/dlaunch", "run", "--nnodes", "2", "--job-root",
                                 tmp_ + "/runs", "--grace", "2", "--", "python3",
                                 tmp_ + "/worker.py", tmp_ + "/hostile", kind, ending},
        tmp_);
  }

  // The hostile rank and its helper, as far as they wrote their pids.
  std::vector<pid_t> Pids() const {
    std::vector<pid_t> pids;
    for (const char* name : {".worker", ".helper"}) {
      pid_t pid = 0;
      if (absl::SimpleAtoi(ReadFile(tmp_ + "/hostile" + name), &pid)) pids.push_back(pid);
    }
    return pids;
  }

  static bool Alive(pid_t pid) {
    const std::string stat = ReadFile(absl::StrCat("/proc/", pid, "/stat"));
    return !stat.empty() && !absl::StrContains(stat.substr(stat.rfind(')')), ") Z");
  }

  // Runs the job to its end: rank 1 fails, or Ctrl-C once rank 0 is hostile.
  void RunToTheEnd(const std::string& kind, const std::string& ending, size_t expected_pids) {
    auto run = Start(kind, ending);
    if (ending == "interrupt") {
      ASSERT_TRUE(WaitFor([&] { return absl::StrContains(run->Stdout(), "rank 0 turned hostile"); },
                          seconds(60)))
          << run->Stdout() << run->Stderr();
      run->Signal(SIGINT);
    }
    const std::optional<int> code = run->Wait(seconds(90));
    ASSERT_TRUE(code.has_value()) << "the job did not end:\n" << run->Stdout() << run->Stderr();
    EXPECT_EQ(*code, ending == "interrupt" ? 130 : 1) << run->Stdout() << run->Stderr();
    const std::vector<pid_t> pids = Pids();
    ASSERT_EQ(pids.size(), expected_pids) << run->Stderr();
    for (pid_t pid : pids) EXPECT_FALSE(Alive(pid)) << pid << " outlived the job\n" << run->Stderr();
  }

  std::string tmp_;
};

TEST_F(EscapingWorkerTest, AWorkerThatClosedItsOutputIsStoppedWhenAnotherRankFails) {
  RunToTheEnd("closed-output", "fail", 1);
}

TEST_F(EscapingWorkerTest, AWorkerThatClosedItsOutputIsStoppedOnCtrlC) {
  RunToTheEnd("closed-output", "interrupt", 1);
}

// A worker cannot setsid() (it leads its own group; a daemon's setsid is the tests above), but
// it can move to another group of its session.
TEST_F(EscapingWorkerTest, AWorkerThatLeftItsProcessGroupIsStoppedWhenAnotherRankFails) {
  RunToTheEnd("new-group", "fail", 2);
}

TEST_F(EscapingWorkerTest, AWorkerThatLeftItsProcessGroupIsStoppedOnCtrlC) {
  RunToTheEnd("new-group", "interrupt", 2);
}

// Garbage, binary bytes, a report split across writes, a line past the 1 MiB bound and a half
// line at the close, on three connections; the good reports among them still arrive.
constexpr char kGarbageReporter[] = R"(import os, socket, time
path = os.environ["DLAUNCH_REPORT_SOCKET"]
def connect():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    return s
def good(step):
    return ('{"kind": "STEP", "step": %d, "samples": 64, "interval_s": 0.5}\n' % step).encode()
s = connect()
s.sendall(b"not json at all\n" + b'{"step": \n' + bytes(range(256)).replace(b"\n", b"") + b"\n"
          + good(1) + b'{"kind": "STEP", "st')
s.close()
s = connect()
try:
    s.sendall(b"x" * (4 << 20))
except OSError:
    pass
s.close()
s = connect()
s.sendall(good(2)[:10])
time.sleep(0.2)
s.sendall(good(2)[10:])
s.close()
print("reports sent", flush=True)
)";

TEST_F(HostileWorkerTest, GarbageOnTheReportSocketIsIgnoredAndTheGoodReportsArrive) {
  std::ofstream(tmp_ + "/reporter.py") << kGarbageReporter;
  ChildProcess run({kBin + "/dlaunch", "run", "--nnodes", "1", "--job-dir", tmp_ + "/job", "--",
                    "python3", tmp_ + "/reporter.py"},
                   tmp_);
  ASSERT_EQ(run.Wait(seconds(60)), 0) << run.Stdout() << run.Stderr();
  EXPECT_TRUE(absl::StrContains(run.Stdout(), "reports sent")) << run.Stdout();
  const std::string agent_log = ReadFile(tmp_ + "/job/logs/agent-0.log");
  EXPECT_TRUE(absl::StrContains(agent_log, "ignored a malformed report from rank 0")) << agent_log;
  EXPECT_TRUE(absl::StrContains(agent_log, "without a newline; connection closed")) << agent_log;
  // Both good reports, whether they went up in one heartbeat (merged) or two.
  const std::string metrics = ReadFile(tmp_ + "/job/metrics.jsonl");
  EXPECT_TRUE(absl::StrContains(metrics, "\"step\":\"2\"")) << metrics;
  EXPECT_TRUE(absl::StrContains(metrics, "\"samples\":\"128\"") ||
              absl::StrContains(metrics, "\"step\":\"1\""))
      << metrics;
}

// Writes `seconds` of output at up to `mb_per_s` MB/s: 1 KiB lines in 1 MiB writes, and every
// 16 MiB a 200 KiB line with no newline until its end. Then writes "<bytes> <seconds>" to argv[1].
constexpr char kFlooder[] = R"(import os, sys, time
report, seconds, rate = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]) * 1e6
chunk = (b"f" * 1023 + b"\n") * 1024
long_line = b"L" * (200 << 10) + b"\n"
def write_all(data):
    view = memoryview(data)
    while view:
        view = view[os.write(1, view):]
    return len(data)
written, start = 0, time.monotonic()
while time.monotonic() - start < seconds:
    written += write_all(chunk)
    if written % (16 << 20) < len(chunk):
        written += write_all(long_line)
    while written > rate * (time.monotonic() - start):
        time.sleep(0.001)
with open(report, "w") as f:
    f.write("%d %f\n" % (written, time.monotonic() - start))
)";

// Peak resident memory (VmRSS, kB) of a process while `running`, sampled every 20 ms.
class RssSampler {
 public:
  explicit RssSampler(std::function<std::vector<pid_t>()> pids)
      : thread_([this, pids = std::move(pids)] {
          while (!done_) {
            for (pid_t pid : pids()) {
              for (absl::string_view line :
                   absl::StrSplit(ReadFile(absl::StrCat("/proc/", pid, "/status")), '\n')) {
                int64_t kb = 0;
                if (absl::ConsumePrefix(&line, "VmRSS:") &&
                    absl::SimpleAtoi(absl::StripSuffix(absl::StripAsciiWhitespace(line), " kB"), &kb)) {
                  peak_kb_ = std::max<int64_t>(peak_kb_, kb);
                }
              }
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
          }
        }) {}
  ~RssSampler() { Stop(); }
  int64_t Stop() {
    done_ = true;
    if (thread_.joinable()) thread_.join();
    return peak_kb_;
  }

 private:
  std::atomic<bool> done_{false};
  std::atomic<int64_t> peak_kb_{0};
  std::thread thread_;
};

// A rank writing ~100 MB/s for 4 s (more than the agent can forward live): the job finishes,
// the agent and the launcher stay far below the flood in memory, the log keeps its first
// DLAUNCH_WORKER_LOG_LIMIT bytes and says how many more there were.
TEST_F(HostileWorkerTest, AFloodAt100MBPerSecondFinishesWithBoundedMemoryAndACountedLog) {
  std::ofstream(tmp_ + "/flood.py") << kFlooder;
  const std::string job = tmp_ + "/job";
  ChildProcess run({kBin + "/dlaunch", "run", "--nnodes", "1", "--job-dir", job, "--", "python3",
                    tmp_ + "/flood.py", tmp_ + "/written", "4", "100"},
                   tmp_, {"DLAUNCH_WORKER_LOG_LIMIT=32M"});
  RssSampler launcher([&] { return std::vector<pid_t>{run.pid()}; });
  RssSampler agent([&] { return FindProcesses("", job + "/token"); });
  const std::optional<int> code = run.Wait(seconds(120));
  const int64_t launcher_kb = launcher.Stop(), agent_kb = agent.Stop();
  ASSERT_EQ(code, 0) << run.Stderr();
  int64_t written = 0;
  const std::vector<std::string> fields = absl::StrSplit(ReadFile(tmp_ + "/written"), ' ');
  ASSERT_TRUE(absl::SimpleAtoi(fields[0], &written)) << fields[0];
  std::cout << "flood: " << written / 1e6 << " MB written; peak RSS agent " << agent_kb / 1024
            << " MiB, launcher " << launcher_kb / 1024 << " MiB\n";
  EXPECT_GT(written, int64_t{64} << 20) << "too little to flood anything";
  EXPECT_GT(agent_kb, 0);
#ifndef DLAUNCH_SANITIZER_MALLOC
  EXPECT_LT(agent_kb, 200 * 1024) << "the agent's memory grew with the flood";
  EXPECT_LT(launcher_kb, 200 * 1024) << "the launcher's memory grew with the flood";
#else
  // A sanitizer's allocator keeps freed memory (ASan's quarantine: 256 MB) and its shadow:
  // resident memory is not the program's own there. The bounds hold in the default build.
  std::cout << "flood: memory bounds not checked under a sanitizer's allocator\n";
#endif
  const std::string log = ReadFile(job + "/logs/rank-0.log");
  const std::string note = absl::StrCat("[dlaunch] this log keeps the first ", 32 << 20,
                                        " bytes of output; ", written - (32 << 20),
                                        " more bytes were not kept\n");
  // The note on a line of its own: after a newline the cap cut inside a line adds.
  const bool cut_mid_line = log.size() > (32u << 20) && log[(32u << 20) - 1] != '\n';
  EXPECT_EQ(log.size(), (32u << 20) + cut_mid_line + note.size());
  EXPECT_TRUE(absl::EndsWith(log, (cut_mid_line ? "\n" : "") + note))
      << log.substr(log.size() - std::min<size_t>(log.size(), 200));
}

// A daemon deaf to SIGTERM that forks and exits every 10 ms: each pid the subreaper's sweep
// lists may be gone (its child adopted) before its signal. The workers' cgroup kills it all at
// once. Skipped where the agent could make no cgroup (it says why).
constexpr char kRunawayWorker[] = R"(import os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
if os.fork() == 0:
    os.setsid()
    while True:
        if os.fork() != 0:
            os._exit(0)
        time.sleep(0.01)
time.sleep(0.5)
print("runaway started", flush=True)
)";

TEST_F(HostileWorkerTest, ADaemonThatForksAwayFromEverySignalEndsWithTheWorkersCgroup) {
  const std::string script = tmp_ + "/runaway.py";
  std::ofstream(script) << kRunawayWorker;
  ChildProcess run({kBin + "/dlaunch", "run", "--nnodes", "1", "--job-dir", tmp_ + "/job",
                    "--grace", "1", "--", "python3", script},
                   tmp_);
  const std::optional<int> code = run.Wait(seconds(90));
  const std::vector<pid_t> left = FindProcesses("", script);
  for (pid_t pid : left) kill(pid, SIGKILL);
  ASSERT_EQ(code, 0) << run.Stderr();
  const std::string agent_log = ReadFile(tmp_ + "/job/logs/agent-0.log");
  if (absl::StrContains(agent_log, "no cgroup for the workers")) {
    GTEST_SKIP() << "the agent made no cgroup here: " << agent_log;
  }
  EXPECT_TRUE(left.empty()) << left.size() << " process(es) of the daemon outlived the job\n"
                            << agent_log;
  // Past the sweep's deadline each new fork is killed as it is found, which may catch it before
  // it forks again; else the cgroup ends it.
  EXPECT_TRUE(absl::StrContains(agent_log, "left in cgroup dlaunch-") ||
              absl::StrContains(agent_log, "process(es) the workers left behind"))
      << agent_log;
}

}  // namespace
}  // namespace dlaunch::testing
