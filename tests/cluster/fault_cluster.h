// The fixture of the fault-injection tests: a 3-host cluster, a `dlaunch run` of the fault
// worker started on `head` over ssh, the means to find and signal its processes, and the checks
// every fault test makes (root cause named, detection time read from events.jsonl, nothing left
// behind on any host).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "cluster_job_checks.h"
#include "gtest/gtest.h"

namespace dlaunch {
namespace testing {

// DLAUNCH_FAULT_SUITE=full: run every scenario, not only the quick subset of the default run.
bool FullFaultSuite();

// tests/cluster/fault_worker.py in the source tree.
std::string FaultWorkerPath();

// The job.yaml settings a scenario changes; empty strings leave a key out (its default).
struct FaultJobOptions {
  int max_restarts = 0;
  std::string nodes;          // `nodes:` ("2:3" lets the job go on without a lost node)
  std::string stall_timeout;  // health.stall_timeout
  std::string exit_timeout;   // stop.exit_timeout
  int master_port = 0;        // rendezvous.master_port
  std::string command;        // replaces the fault worker (a full `command:` value)
  std::string preflight;      // a full `preflight:` value, e.g. "off" (default: collective off)
  int relay_fanout = 0;       // rendezvous.relay_fanout: the agents' sessions through relays
  std::string extra;          // more of job.yaml, appended as it is (`env:`, `stragglers:`)
};

// A tmpfs mounted on a fresh directory under /tmp, unmounted and removed on destruction.
class ScopedTmpfs {
 public:
  explicit ScopedTmpfs(const std::string& size);
  ~ScopedTmpfs();
  ScopedTmpfs(const ScopedTmpfs&) = delete;
  ScopedTmpfs& operator=(const ScopedTmpfs&) = delete;

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::string error_;
  bool mounted_ = false;
};

class FaultClusterTest : public DlaunchClusterTest {
 public:
  static constexpr int kNodes = 3;
  static constexpr int kProcs = 2;

  FaultClusterTest() : DlaunchClusterTest(kNodes) {}

  // Writes job.yaml (hosts h1..h3 over ssh, 2 ranks each, heartbeat 1 s x 3, grace 2 s) for the
  // fault worker with `worker_args`, and starts `dlaunch run` on head. The launcher's PID, or
  // -1.
  pid_t StartJob(const std::string& name, const std::vector<std::string>& worker_args,
                 const FaultJobOptions& options = {});
  // The launcher's exit code once it ended (-1 when it is still running after `timeout`).
  int WaitJobEnd(pid_t launcher, absl::Duration timeout = absl::Seconds(90));
  // Every rank's log says it reached `step` (in round 0) within `timeout`.
  bool WaitAllRanksAtStep(int step, absl::Duration timeout = absl::Seconds(60));

  std::string LauncherOutput() const;
  std::string job_dir();   // "" until the launcher made it
  std::string job_id();
  std::string ReadJobFile(const std::string& relative);

  // PID of the fault worker of `rank`, of the agent on `host`, or -1.
  pid_t RankPid(int rank);
  pid_t AgentPid(const std::string& host);
  // The job's agent and workers in `host`'s namespace.
  std::vector<pid_t> HostJobPids(const std::string& host);
  // Waits until HostJobPids(host) is empty; what is left (as "pid: cmdline").
  std::vector<std::string> WaitHostEmpty(const std::string& host, absl::Duration timeout);
  // Polls (every 5 ms) until none of the job's workers on `host` now runs (reaped, or a
  // zombie); when it saw that (an upper bound of when the last one ended), or InfiniteFuture
  // after `timeout`.
  absl::Time WaitHostWorkersGone(const std::string& host, absl::Duration timeout);
  // Something listens on TCP `port` in `host`'s namespace (waits up to 10 s).
  bool WaitListening(const std::string& host, int port);

  // A fresh path for the fault worker's --stamp-file (`EVENT RANK ROUND UNIX_TIME` lines).
  std::string StampFile() const;
  // The earliest `event` stamp of `round` there; InfiniteFuture when none.
  static absl::Time FirstStamp(const std::string& path, const std::string& event, int round);
  // The time the worker's log gives for its own fault (`fault-worker: rank R WHAT at T`).
  absl::Time WorkerFaultTime(int rank, const std::string& what);
  // When the launcher wrote its first failure_detected event (events.jsonl's "time").
  absl::Time FirstFailureTime();
  // When the launcher wrote `event` first (InfinitePast when it did not).
  absl::Time FirstEventTime(const std::string& event);

  // The launcher's first `[dlaunch] error:` line ("" when there is none).
  std::string FirstErrorLine() const;
  // The first `[dlaunch] error:` line names `cls` and the rank with its local rank, node and
  // host (2 ranks per node, nodes in host order); so does the first root_cause event of
  // events.jsonl, whose description contains `how`, and, when the job failed, summary.json's
  // root_cause.
  void ExpectRootCause(const std::string& cls, int rank, const std::string& how);
  // The same for a failure of a whole node.
  void ExpectNodeRootCause(const std::string& cls, int node, const std::string& how);
  // The job restarted once, every rank of round 1 (`world` of them) ran in at most `bound`
  // from the detection (events.jsonl's restart_s) and finished, and the job succeeded.
  void ExpectRestartedAndSucceeded(int world, absl::Duration bound);
  // The first failure_detected event came at most `bound` after `fault`.
  void ExpectDetectedWithin(absl::Time fault, absl::Duration bound);
  // No process of the job on any host (within 15 s), and nothing listening in any host's
  // namespace.
  void ExpectNothingLeft();

 protected:
  // What ExpectRootCause and ExpectNodeRootCause share: `where` as the first error line, the
  // first root_cause event and a failed job's summary.json spell it.
  void ExpectCause(const std::string& cls, const std::string& where_line,
                   const std::string& where_json, const std::string& how);

  std::string launcher_log_;
  std::string job_yaml_;
};

}  // namespace testing
}  // namespace dlaunch

// Skips a scenario outside the full fault suite (it keeps the default test run short).
#define FAULT_SUITE_FULL_ONLY()                                                        \
  do {                                                                                 \
    if (!::dlaunch::testing::FullFaultSuite()) {                                       \
      GTEST_SKIP() << "in the full fault suite only: DLAUNCH_FAULT_SUITE=full "         \
                   << "(docs/testing.md)";                                             \
    }                                                                                  \
  } while (0)
