// The agent across restart rounds with real processes: `dlaunch run` (the real launcher), real
// dlaunch-agent processes on loopback, and /bin/sh workers that record their environment. Times
// are bounded generously; the restart's own speed is measured in bench/, not here.
#include <signal.h>
#include <sys/stat.h>

#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "tests/integration/test_process.h"

namespace dlaunch::testing {
namespace {

using std::chrono::seconds;

const std::string kBin = DLAUNCH_BIN_DIR;

// One line a worker wrote at its start: its round and environment.
struct WorkerStart {
  int rank = -1;
  int round = -1;
  std::string restart_count, max_restarts, master_port, agent_pid;
};

// Each rank appends "rank round restart_count max_restarts master_port agent_pid" to
// <dir>/starts, then runs `body` (sh).
std::string RecordingWorker(const std::string& dir, const std::string& body) {
  return absl::StrCat(
      "echo \"$RANK $DLAUNCH_ROUND $TORCHELASTIC_RESTART_COUNT $TORCHELASTIC_MAX_RESTARTS "
      "$MASTER_PORT $PPID\" >> ",
      dir, "/starts; ", body);
}

std::vector<WorkerStart> ReadStarts(const std::string& path) {
  std::vector<WorkerStart> out;
  for (absl::string_view line : absl::StrSplit(ReadFile(path), '\n', absl::SkipEmpty())) {
    std::vector<std::string> f = absl::StrSplit(line, ' ');
    if (f.size() != 6) {
      ADD_FAILURE() << "bad line: " << line;
      continue;
    }
    out.push_back({std::stoi(f[0]), std::stoi(f[1]), f[2], f[3], f[4], f[5]});
  }
  return out;
}

class AgentRoundsProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_ = MakeTempDir();
    job_id_ = tmp_.substr(tmp_.rfind('/') + 1);
    job_dir_ = tmp_ + "/" + job_id_;
  }

  // dlaunch run of `nodes` local agents with one /bin/sh worker each running `script`.
  std::unique_ptr<ChildProcess> Run(int nodes, const std::string& script,
                                    const std::vector<std::string>& flags) {
    std::vector<std::string> argv = {kBin + "/dlaunch", "run", "--nnodes", std::to_string(nodes),
                                     "--nproc-per-node", "1", "--job-dir", job_dir_,
                                     "--heartbeat", "1", "--grace", "2"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    for (const char* a : {"--", "/bin/sh", "-c"}) argv.push_back(a);
    argv.push_back(script);
    return std::make_unique<ChildProcess>(argv, tmp_);
  }

  std::vector<pid_t> JobProcesses() const {
    return FindProcesses("DLAUNCH_JOB_ID=" + job_id_, job_dir_ + "/token");
  }

  std::string AgentLogs(const ChildProcess& run) const { return run.Stdout() + run.Stderr(); }

  // What every agent of the job wrote, from the job directory.
  std::string AgentFiles() const {
    return ReadFile(job_dir_ + "/logs/agent-0.log") + ReadFile(job_dir_ + "/logs/agent-1.log");
  }

  std::string tmp_, job_id_, job_dir_;
};

TEST_F(AgentRoundsProcessTest, AFailedRoundRestartsOnTheSameAgentsWithTheNextRoundsEnvironment) {
  // Round 0: rank 1 fails, rank 0 waits to be stopped. Round 1: both succeed. Rank 1 fails a
  // second in, once every agent's session is surely open: a failure before that is the
  // launcher's rendezvous race, not what this test is about.
  const std::string script = RecordingWorker(
      tmp_,
      "if [ \"$DLAUNCH_ROUND\" = 0 ]; then [ \"$RANK\" = 1 ] && sleep 1 && exit 3; sleep 60; fi;"
      " exit 0");
  auto run = Run(2, script, {"--max-restarts", "1"});
  auto code = run->Wait(seconds(120));
  ASSERT_TRUE(code.has_value()) << "dlaunch run did not finish\n" << AgentLogs(*run);
  EXPECT_EQ(*code, 0) << AgentLogs(*run);

  std::vector<WorkerStart> starts = ReadStarts(tmp_ + "/starts");
  ASSERT_EQ(starts.size(), 4u) << ReadFile(tmp_ + "/starts");
  std::map<int, std::set<std::string>> agents_of_round, ports_of_round;
  for (const WorkerStart& s : starts) {
    SCOPED_TRACE(absl::StrCat("rank ", s.rank, " round ", s.round));
    ASSERT_TRUE(s.round == 0 || s.round == 1);
    EXPECT_EQ(s.restart_count, std::to_string(s.round));
    EXPECT_EQ(s.max_restarts, "1");
    agents_of_round[s.round].insert(s.agent_pid);
    ports_of_round[s.round].insert(s.master_port);
  }
  // The same two agents ran both rounds: they re-joined in place, nothing was relaunched.
  EXPECT_EQ(agents_of_round[0].size(), 2u);
  EXPECT_EQ(agents_of_round[0], agents_of_round[1]);
  // One MASTER_PORT per round, a new one for round 1.
  ASSERT_EQ(ports_of_round[0].size(), 1u);
  ASSERT_EQ(ports_of_round[1].size(), 1u);
  EXPECT_NE(*ports_of_round[0].begin(), *ports_of_round[1].begin());
  EXPECT_TRUE(WaitFor([&] { return JobProcesses().empty(); }, seconds(5)));
}

TEST_F(AgentRoundsProcessTest, AnAgentThatLostItsLauncherFencesItselfAndLeavesNothing) {
  // The launcher frozen (SIGSTOP): no message, but its socket stays open, so only the lease
  // (heartbeat 1 s x 3, at least 5 s) can tell the agents. They stop their workers and exit.
  const std::string script = RecordingWorker(tmp_, "exec sleep 120");
  auto run = Run(2, script, {"--max-restarts", "2"});
  ASSERT_TRUE(WaitFor([&] { return ReadStarts(tmp_ + "/starts").size() == 2; }, seconds(60)))
      << AgentLogs(*run);
  std::vector<WorkerStart> starts = ReadStarts(tmp_ + "/starts");
  run->Signal(SIGSTOP);
  // 5 s of lease, 2 s of grace, and a loaded machine's slack. The agents' processes are
  // zombies until the launcher reaps them, and FindProcesses skips zombies.
  const bool gone = WaitFor([&] { return JobProcesses().empty(); }, seconds(30));
  run->Signal(SIGCONT);
  // Thawed, the launcher finds its agents gone and ends the job as failed.
  std::optional<int> code = run->Wait(seconds(60));
  if (!code) run->Signal(SIGKILL), run->Wait(seconds(10));
  EXPECT_TRUE(gone) << "agents or workers still running 30 s after the launcher froze";
  EXPECT_EQ(code, std::optional<int>(1)) << AgentLogs(*run);
  for (int node = 0; node < 2; ++node) {
    // The agents' output reaches their log through the launcher, which has read it by now.
    const std::string log = ReadFile(absl::StrCat(job_dir_, "/logs/agent-", node, ".log"));
    EXPECT_NE(log.find("fenced: no word from the launcher for"), std::string::npos) << log;
  }
  for (const WorkerStart& s : starts) {
    EXPECT_NE(kill(std::stoi(s.agent_pid), 0), 0) << "agent " << s.agent_pid << " still alive";
  }
}

// A chain of daemons deaf to SIGTERM, each in a session of its own and the parent of the next:
// the agent adopts each only once it killed the one before. Their pids go to argv[1], a line each.
constexpr char kDeafDaemonChain[] = R"(import os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
pidfile, depth = sys.argv[1], 4
if os.fork() == 0:
    for i in range(depth):
        os.setsid()
        with open(pidfile, "a") as f:
            f.write("%d\n" % os.getpid())
        if i == depth - 1 or os.fork() != 0:
            break
    while True:
        time.sleep(1)
while len(open(pidfile).read().split()) < depth if os.path.exists(pidfile) else True:
    time.sleep(0.01)
)";

// A daemon deaf to SIGTERM that forks and exits every 10 ms: each pid the sweep lists may be gone
// (its child adopted) before its signal; the workers' cgroup ends it all at once.
constexpr char kRunawayDaemon[] = R"(import os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
if os.fork() == 0:
    os.setsid()
    while True:
        if os.fork() != 0:
            os._exit(0)
        time.sleep(0.01)
time.sleep(0.5)
)";

bool Alive(pid_t pid) {
  // A zombie is gone for this purpose: it holds nothing but its pid.
  const std::string stat = ReadFile(absl::StrCat("/proc/", pid, "/stat"));
  return !stat.empty() && !absl::StrContains(stat.substr(stat.rfind(')')), ") Z");
}

// Round 0: rank 1 starts `daemon` and fails; round 1 succeeds. The agent of node 1 sweeps the
// daemon at the end of round 0, on timers: with a heartbeat of 1 s and 3 misses, a sweep on the
// loop longer than 3 s would cost the node its place (the job has no spare, so it would fail).
class AgentSweepProcessTest : public AgentRoundsProcessTest {
 protected:
  std::unique_ptr<ChildProcess> RunWithDaemon(const char* daemon) {
    std::ofstream(tmp_ + "/daemon.py") << daemon;
    const std::string script = RecordingWorker(
        tmp_, absl::StrCat("if [ \"$DLAUNCH_ROUND\" = 0 ]; then [ \"$RANK\" = 1 ] && python3 ",
                           tmp_, "/daemon.py ", tmp_, "/daemons && sleep 1 && exit 3; sleep 60; fi;",
                           " exit 0"));
    return Run(2, script, {"--max-restarts", "1"});
  }

  // The job succeeded in round 1 with the same two agents as round 0: no node was lost.
  void ExpectSameAgentsSucceeded(ChildProcess& run) {
    const std::optional<int> code = run.Wait(seconds(120));
    ASSERT_TRUE(code.has_value()) << "dlaunch run did not finish\n" << AgentLogs(run);
    EXPECT_EQ(*code, 0) << AgentLogs(run);
    const std::string all = AgentLogs(run) + AgentFiles();
    EXPECT_FALSE(absl::StrContains(all, "no heartbeat for")) << all;
    std::map<int, std::set<std::string>> agents_of_round;
    for (const WorkerStart& s : ReadStarts(tmp_ + "/starts")) agents_of_round[s.round].insert(s.agent_pid);
    EXPECT_EQ(agents_of_round[0].size(), 2u);
    EXPECT_EQ(agents_of_round[0], agents_of_round[1]) << "a node was replaced";
  }
};

TEST_F(AgentSweepProcessTest, ANodeWhoseWorkerLeftDaemonsDeafToSigtermKeepsItsPlaceWhileTheyAreSwept) {
  auto run = RunWithDaemon(kDeafDaemonChain);
  ExpectSameAgentsSucceeded(*run);
  std::vector<pid_t> daemons;
  for (absl::string_view line : absl::StrSplit(ReadFile(tmp_ + "/daemons"), '\n', absl::SkipEmpty())) {
    pid_t pid = 0;
    if (absl::SimpleAtoi(line, &pid)) daemons.push_back(pid);
  }
  for (pid_t pid : daemons) kill(pid, SIGKILL);  // whatever the outcome, nothing stays behind
  ASSERT_EQ(daemons.size(), 4u) << "the daemons never started";
  for (pid_t pid : daemons) EXPECT_FALSE(Alive(pid)) << "daemon " << pid << " outlived the sweep";
  // Ended by the sweep of round 0 (by SIGKILL: they ignore SIGTERM), not by the agent's exit.
  const std::string logs = AgentFiles();
  EXPECT_TRUE(absl::StrContains(logs, "ended 4 process(es) the workers left behind")) << logs;
}

TEST_F(AgentSweepProcessTest, ANodeWhoseWorkerLeftADaemonForkingAwayKeepsItsPlaceAndTheCgroupEndsIt) {
  auto run = RunWithDaemon(kRunawayDaemon);
  const std::string daemon = tmp_ + "/daemon.py";
  ExpectSameAgentsSucceeded(*run);
  const std::vector<pid_t> left = FindProcesses("", daemon);
  for (pid_t pid : left) kill(pid, SIGKILL);
  const std::string logs = AgentFiles();
  if (absl::StrContains(logs, "no cgroup for the workers")) {
    GTEST_SKIP() << "the agents made no cgroup here: " << logs;
  }
  EXPECT_TRUE(left.empty()) << left.size() << " process(es) of the daemon outlived the job\n" << logs;
  // Past the sweep's deadline each new fork is killed as it is found, which may catch it before
  // it forks again; else the cgroup ends it.
  EXPECT_TRUE(absl::StrContains(logs, "left in cgroup dlaunch-") ||
              absl::StrContains(logs, "process(es) the workers left behind"))
      << logs;
}

}  // namespace
}  // namespace dlaunch::testing
