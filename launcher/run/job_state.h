// JobState: the launcher's decisions about one job, torchelastic/Flux style. Each event (the
// rendezvous closed, an agent's session opened or ended, a worker event or report, a node
// launcher exited, a tick, a signal) updates the state and returns the actions to take: print,
// append to events.jsonl or metrics.jsonl, tell nodes to stop, stop or kill the node launchers,
// arm the stop deadline, finish. Time comes in as seconds since the job started; no clocks,
// threads or I/O, so every rule is unit-tested with synthetic times. JobController applies the
// actions. Effects are idempotent: repeating a stop never moves the kill deadline later.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "dlaunch/control.pb.h"
#include "launcher/run/failure.h"
#include "launcher/run/job_view.h"
#include "launcher/run/progress_monitor.h"
#include "rendezvous/rendezvous_state.h"

namespace dlaunch {

struct JobConfig {
  std::string job_id;
  std::string job_dir;
  std::vector<std::string> hosts;            // node-rank order the rendezvous expects
  std::string node_launcher;                 // local, ssh, mpiexec, ...
  double heartbeat_s = 2;
  int heartbeat_misses = 3;
  double stop_grace_s = 10;
  double summary_interval_s = 5;
  // Stall and exit-hang limits (health.*, stop.exit_timeout).
  ProgressSettings progress;
};

// Actions. Lines are complete ("[dlaunch] ..." or "[rank N] ..."), without the newline.
struct PrintLine {
  bool to_stderr = false;
  std::string text;
};
struct AppendEvent {
  std::string json;  // one events.jsonl object; the writer puts the wall-clock "time" first
};
struct AppendMetric {
  int node = 0;
  v1::WorkerReport report;
};
struct SendStop {
  std::vector<int> nodes;
  int grace_ms = 0;
  std::string reason;
  std::vector<int> dump_ranks;  // hung ranks whose stacks are recorded before the stop
};
struct SendPing {  // an empty command: proof of life for the agents' watchdogs
  std::vector<int> nodes;
};
struct StopLaunchers {
  int grace_ms = 0;
};
struct KillLaunchers {};
struct ArmStopDeadline {
  double at_s = 0;  // call OnStopDeadline then
};
struct ArmHealthCheck {
  double at_s = 0;  // call OnHealthCheck then (a later arming replaces an earlier one)
};
struct WriteSummary {
  std::string json;
};
struct FinishJob {
  int exit_code = 0;
};
using JobAction = std::variant<PrintLine, AppendEvent, AppendMetric, SendStop, SendPing,
                               StopLaunchers, KillLaunchers, ArmStopDeadline, ArmHealthCheck, WriteSummary,
                               FinishJob>;
using JobActions = std::vector<JobAction>;

class JobState {
 public:
  explicit JobState(JobConfig config);

  // The job starts: announce it. `launcher_programs` is argv[0] of each node-launcher process
  // about to start, in the order OnLauncherExited numbers them.
  JobActions OnStarted(std::vector<std::string> launcher_programs, double now_s);
  JobActions OnNodeJoined(const Participant& p, int joined, int expected, double now_s);
  JobActions OnRendezvousClosed(const RoundResult& result, double now_s);
  JobActions OnRendezvousFailed(const absl::Status& status, double now_s);
  // `session` tells a node's current session from one it replaced.
  JobActions OnSessionOpened(int node, int session, double now_s);
  JobActions OnAgentMessage(int node, const v1::AgentMessage& message, double now_s);
  JobActions OnSessionEnded(int node, int session, double now_s);
  // Node launcher `index` (the order of JobConfig::launcher_programs) exited.
  JobActions OnLauncherExited(int index, int wait_status, const std::vector<std::string>& tail,
                              double now_s);
  // Periodic: pings, lost nodes (missed heartbeats), the summary line.
  JobActions OnTick(double now_s);
  // SIGINT/SIGTERM/SIGHUP: the first stops gracefully, the second kills now.
  JobActions OnSignal(int signal, double now_s);
  // The armed stop deadline passed (a timer may fire late or for an older deadline).
  JobActions OnStopDeadline(double now_s);
  // The armed health check is due: stalls and hangs at exit, and a root cause held back.
  JobActions OnHealthCheck(double now_s);
  JobActions OnCallRefused(const std::string& peer, const std::string& method);

  bool finished() const { return finished_; }
  // The tick period: the heartbeat interval, at most one second.
  double tick_interval_s() const;

 private:
  enum class Outcome { kRunning, kSucceeded, kFailed, kLaunchError, kInterrupted };
  struct Node {
    std::string host;
    std::string addr;
    int session = -1;  // -1: never opened
    bool session_ended = false;
    double last_seen_s = 0;
    int workers_running = 0;
  };
  bool SessionOpen(const Node& n) const { return n.session >= 0 && !n.session_ended; }

  void HandleWorkerEvent(int node, const v1::WorkerEvent& event, double now_s, JobActions& out);
  void HandleReport(int node, const v1::WorkerReport& report, double now_s, JobActions& out);
  void NodeLost(int node, FailureClass cls, const std::string& why, double now_s, JobActions& out);
  // A failure of the job: recorded for the root cause, and the first one stops the job.
  void Fail(Outcome outcome, Failure failure, double now_s, JobActions& out);
  // A stop without a failure of a rank or node (a signal, a rendezvous that never closed).
  void FailWith(Outcome outcome, const std::string& reason, std::vector<std::string> detail,
                double now_s, JobActions& out);
  // A rank reported stopped that died of a SIGKILL no agent had sent yet.
  bool KilledByOthers(const v1::WorkerEvent& ev, double now_s) const;
  void CheckHealth(double now_s, JobActions& out);
  // Prints the root cause once it is settled (see kPeerSettleS in job_state.cc).
  void Announce(double now_s, bool force, JobActions& out);
  void ArmHealth(JobActions& out);
  Failure RankFailure(FailureClass cls, int rank, double now_s) const;
  void StopAll(double grace_s, const std::string& reason, double now_s, JobActions& out);
  void MaybeFinish(double now_s, JobActions& out);
  void Finish(double now_s, JobActions& out);
  void Say(const std::string& line, JobActions& out) const;

  const JobConfig config_;
  std::vector<std::string> launcher_programs_;
  std::optional<RoundResult> round_;
  double rendezvous_closed_at_s_ = 0;
  std::map<int, Node> nodes_;           // by node rank
  std::map<int, RankProgress> ranks_;   // by global rank
  int launchers_running_ = 0;
  Outcome outcome_ = Outcome::kRunning;
  std::string failure_;
  std::vector<std::string> failure_detail_;
  std::vector<Failure> failures_;           // every failure seen, in order
  std::optional<double> announce_at_s_;     // a root cause held back until then
  std::string announced_;                   // the root cause as last printed
  ProgressMonitor monitor_;
  double health_armed_at_s_ = -1;
  std::vector<int> dump_ranks_;             // hung ranks, for the stop command
  int signals_seen_ = 0;
  bool all_started_reported_ = false;
  std::optional<double> stop_started_at_s_;
  std::optional<double> stop_deadline_s_;
  double last_summary_s_ = 0;
  bool finished_ = false;
};

}  // namespace dlaunch
