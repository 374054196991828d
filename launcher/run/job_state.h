// JobState: the launcher's decisions about one job, torchelastic/Flux style. Each event (the
// rendezvous closed, an agent's session opened or ended, a worker event or report, a node
// launcher exited, a tick, a signal) updates the state and returns the actions to take: print,
// append to events.jsonl or metrics.jsonl, tell nodes to stop or to start a restart round,
// stop or kill the node launchers, arm the stop deadline, finish. Time comes in as seconds since the job started; no clocks,
// threads or I/O, so every rule is unit-tested with synthetic times. JobController applies the
// actions. Effects are idempotent: repeating a stop never moves the kill deadline later.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "common/liveness_policy.h"
#include "dlaunch/control.pb.h"
#include "dlaunch/journal.pb.h"
#include "launcher/run/failure.h"
#include "launcher/run/job_events.h"
#include "launcher/run/job_view.h"
#include "launcher/run/progress_monitor.h"
#include "launcher/run/restart_policy.h"
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
  // The agents' time for hung ranks' stacks (StopCommand.dump_budget_ms): a stop that asks for
  // stacks is late by at most this, and the launcher waits that much longer for it.
  double stack_dump_s = 10;
  double summary_interval_s = 5;
  // Stall and exit-hang limits (health.*, stop.exit_timeout).
  ProgressSettings progress;
  // Restart rounds (max_restarts, restarts.*): a round keeps at least min_nodes nodes. Round 0's
  // MASTER_PORT is master_port when set; every later round's is a fresh port of its node 0.
  RestartSettings restarts;
  int min_nodes = 1;
  int master_port = 0;
};

// Actions. Lines are complete ("[dlaunch] ..." or "[rank N] ..."), without the newline.
struct PrintLine {
  bool to_stderr = false;
  std::string text;
};
struct AppendEvent {
  v1::JobEvent event;  // one events.jsonl record; the writer sets its wall-clock time
};
struct AppendMetric {
  int node = 0;   // node id
  v1::WorkerReport report;
  int round = 0;
};
struct SendStop {
  std::vector<int> nodes;  // node ids
  int grace_ms = 0;
  std::string reason;
  std::vector<int> dump_ranks;  // hung ranks whose stacks are recorded before the stop
  int round = 0;                // the round whose workers stop
  bool exit = true;             // the agent exits once they have; false: it waits for a round
  int dump_budget_ms = 0;       // JobConfig::stack_dump_s when dump_ranks is not empty
};
// Round `round.round` starts: node_ids[i] takes the place round.assignments[i].
struct SendStartRound {
  RoundResult round;
  std::vector<int> node_ids;
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
using JobAction = std::variant<PrintLine, AppendEvent, AppendMetric, SendStop, SendStartRound, SendPing,
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
  // An agent joined after the round closed: spare node `node_id`, waiting for a lost node's place.
  JobActions OnSpareJoined(const Participant& p, int node_id, double now_s);
  // Nodes are named by their node id (JoinResponse.node_id), stable across rounds.
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
    double session_ended_at_s = 0;
    double last_seen_s = 0;
    int workers_running = 0;
    Participant joined;     // as it joined: slots, and its first worker port
    bool spare = false;     // waiting for a place in a later round
    bool gone = false;      // excluded, lost or dropped: no longer in the job
    bool told_to_exit = false;
    int ended_round = -1;   // the latest round it reported ended (RoundEnded)
    int worker_port = 0;    // its freshest free port (RoundEnded, else its Join)
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

  // Restart rounds (job_state_rounds.cc).
  bool CanRestart(const Failure& f) const;
  // Stops the current round's workers; the agents stay for the next round.
  void BeginRoundStop(double now_s, JobActions& out);
  // Moves a restart on: the round stop ended (or timed out), the back-off passed.
  void AdvanceRestart(double now_s, JobActions& out);
  void DecideRestart(double now_s, JobActions& out);
  void StartNextRound(double now_s, JobActions& out);
  // Members of the stopped round that did not end it leave the job; the next round waits for
  // their workers (NoteWorkersMayRun).
  void DropMembersThatDidNotEnd(JobActions& out);
  // Moves workers_gone_by_s_ to cover the members of the stopped round that did not end it.
  void NoteWorkersMayRun();
  void GiveUp(const std::string& reason, double now_s, JobActions& out);
  // A message of a node no longer in the job, or of a round that has moved on: true when the
  // message is to be dropped (liveness still counts).
  bool DropStale(int node, const v1::AgentMessage& msg, JobActions& out);
  void HandleRoundEnded(int node, const v1::RoundEnded& ended, double now_s, JobActions& out);
  // Tells `node` to exit (excluded, lost, dropped spare) and forgets it.
  void Dismiss(int node, const std::string& event, const std::string& why, JobActions& out);
  void SpareLost(int node, const std::string& why, JobActions& out);
  bool Restarting() const { return round_stop_.has_value() || restart_at_s_.has_value(); }
  int NodeRankOf(int node) const;
  NodePlace PlaceOf(int node) const;  // its id, rank in the current round, host
  int current_round() const { return round_ ? round_->round : 0; }

  const JobConfig config_;
  // heartbeat_s x heartbeat_misses, as every agent got it in its JoinResponse.
  const LivenessPolicy liveness_;
  std::vector<std::string> launcher_programs_;
  std::optional<RoundResult> round_;
  double rendezvous_closed_at_s_ = 0;
  std::map<int, Node> nodes_;           // by node id
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

  // Restart rounds.
  std::vector<int> members_;                // node ids of the current round, in node-rank order
  RestartPolicy policy_;
  struct RoundStop {
    double deadline_s = 0;                  // members not ended by then are lost
  };
  std::optional<RoundStop> round_stop_;     // the current round is stopping for a restart
  std::optional<double> restart_at_s_;      // back-off: the next round starts then
  // No two rounds at once: the workers of every member that left the stopped round without its
  // RoundEnded are surely gone by then (LivenessPolicy::workers_gone_after), and the next round
  // starts no sooner.
  double workers_gone_by_s_ = 0;
  std::vector<int> next_members_;           // decided, waiting for the back-off
  std::optional<double> restart_detected_at_s_;  // the failure that began the restart
  long checkpoint_step_ = -1;               // newest complete checkpoint any rank reported
  std::optional<double> round_running_since_s_;  // every worker of the round started then
  std::string gave_up_;                     // why the job was not restarted
};

}  // namespace dlaunch
