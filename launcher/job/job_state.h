// JobState: the launcher's decisions about one job, torchelastic/Flux style. Each event (the
// rendezvous closed, an agent's session opened or ended, a worker event or report, a node
// launcher exited, a tick, a signal) updates the state and returns the actions to take
// (job_actions.h): print, append to the journal, tell nodes to stop or to start a restart
// round, stop or kill the node launchers, arm timers, finish. Time comes in as seconds since
// the job started; no clocks, threads or I/O, so every rule is unit-tested with synthetic
// times. JobController applies the actions. Effects are idempotent: repeating a stop never
// moves the kill deadline later.
//
// It is a thin composition of parts, each with its own tests: the NodeTable (who is in the
// job, sessions, liveness), the RankTable (the round's ranks, their progress and counts), the
// FailureLedger (failures, root cause, its announcement), the RoundCoordinator (restart
// rounds), the ProgressMonitor (stalls, hangs at exit) and the summary (v1::JobSummary,
// totalled by job_view.h). The live view's snapshot is read from the same parts
// (job_snapshot.h). Its terminal lines that tell what an event tells are made from the event
// (NarrateEvent, job_view.h).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/liveness_policy.h"
#include "dlaunch/control.pb.h"
#include "dlaunch/journal.pb.h"
#include "launcher/job/failure.h"
#include "launcher/job/failure_ledger.h"
#include "launcher/job/job_actions.h"
#include "launcher/job/line_budget.h"
#include "launcher/job/job_events.h"
#include "launcher/job/job_snapshot.h"
#include "launcher/job/job_view.h"
#include "launcher/job/metrics_cadence.h"
#include "launcher/job/node_table.h"
#include "launcher/job/progress_monitor.h"
#include "launcher/job/rank_table.h"
#include "launcher/job/relay_moves.h"
#include "launcher/job/restart_policy.h"
#include "launcher/job/round_coordinator.h"
#include "launcher/job/stall_inquiry.h"
#include "launcher/job/straggler_score.h"
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
  // The straggler score (stragglers.*); `exclude_stragglers`: stragglers.policy: exclude, a
  // node named is left out at the next restart (docs/stragglers.md).
  StragglerSettings stragglers;
  bool exclude_stragglers = false;
  // Said after the job's first line: what the nodes check before they join (PreflightNote).
  std::string preflight_note;
};


class JobState {
 public:
  explicit JobState(JobConfig config);
  // The job's liveness rule (common/liveness_policy.h), its lease sized for its hosts: the
  // agents get the same lease in their JoinResponse (lease_ms).
  static LivenessPolicy Liveness(const JobConfig& config);

  // The job starts: announce it. `launcher_programs` is argv[0] of each node-launcher process
  // about to start, in the order OnLauncherExited numbers them.
  JobActions OnStarted(std::vector<std::string> launcher_programs, double now_s);
  JobActions OnNodeJoined(const Participant& p, int joined, int expected, double now_s);
  JobActions OnRendezvousClosed(const RoundResult& result, double now_s);
  JobActions OnRendezvousFailed(const absl::Status& status, double now_s);
  // An agent joined after the round closed: spare node `node_id`, waiting for a lost node's place.
  JobActions OnSpareJoined(const Participant& p, int node_id, double now_s);
  // An agent whose node failed its preflight: named, and left out of the job.
  JobActions OnNodeUnfit(const Participant& p, double now_s);
  // Whether one more agent may join as a spare: the nodes not gone are fewer than the `agents`
  // the job started (a flood of joins beyond them is refused, not kept).
  bool HasRoomForSpare(int agents) const { return agents <= 0 || nodes_.NotGone() < agents; }
  // A join refused after the round closed (too late, or no room): counted, and said for the
  // first three and at every tenfold count, so a flood cannot flood the terminal or journal.
  JobActions OnJoinRefused(const std::string& why);
  // Nodes are named by their node id (JoinResponse.node_id), stable across rounds.
  // `session` tells a node's current session from one it replaced.
  JobActions OnSessionOpened(int node, int session, double now_s);
  JobActions OnAgentMessage(int node, const v1::AgentMessage& message, double now_s);
  JobActions OnSessionEnded(int node, int session, double now_s);
  // A relay went with these nodes' sessions on it (docs/relays.md). While the job runs they keep
  // their places and their agents have the loss limit to open a session with the launcher
  // (OnSessionOpened, then OnSessionResumed); one that does not is lost as a silent node. Said
  // and journaled; nullopt when the job no longer runs (the caller ends the sessions).
  std::optional<JobActions> OnRelayLost(const std::string& relay, const std::vector<int>& nodes,
                                        double now_s);
  // `node` opened a session again while it kept its place (its relay was lost, or its stream
  // broke before the launcher saw the end): journaled, and said once a lost relay's last node
  // is back.
  JobActions OnSessionResumed(int node, double now_s);
  // Node launcher `index` (the order of JobConfig::launcher_programs) exited.
  JobActions OnLauncherExited(int index, int wait_status, const std::vector<std::string>& tail,
                              double now_s);
  // Periodic: pings, lost nodes (missed heartbeats), the summary line. `loop_lag_s`: how late the
  // tick runs behind its due time (the shell's queue delay); messages received within it may not
  // be handled yet, so the loss rule allows for it.
  JobActions OnTick(double now_s, double loop_lag_s = 0);
  // SIGINT/SIGTERM/SIGHUP: the first stops gracefully, the second kills now.
  JobActions OnSignal(int signal, double now_s);
  // The armed stop deadline passed (a timer may fire late or for an older deadline).
  JobActions OnStopDeadline(double now_s);
  // The armed health check is due: stalls and hangs at exit, and a root cause held back.
  JobActions OnHealthCheck(double now_s);
  JobActions OnCallRefused(const std::string& peer, const std::string& method);

  // The live view's picture of the job now (the terminal table, `dlaunch watch`).
  v1::JobSnapshot Snapshot(double now_s) const;

  bool finished() const { return finished_; }
  // The tick period: the heartbeat interval, at most one second.
  double tick_interval_s() const;

 private:
  enum class Outcome { kRunning, kSucceeded, kFailed, kLaunchError, kInterrupted };

  // Messages in (job_state.cc).
  // A heartbeat's GPU and host samples; the host's into metrics.jsonl every summary interval.
  void NoteHostHealth(int node, const v1::Heartbeat& hb, double now_s, JobActions& out);
  void HandleHeartbeat(int node, const v1::Heartbeat& hb, double now_s, JobActions& out);
  // Each rank's GPUs' samples to the straggler score (job_state_stragglers.cc).
  void NoteRankGpus(int node, const v1::Heartbeat& hb, double now_s);
  void HandleWorkerEvent(int node, const v1::WorkerEvent& event, double now_s, JobActions& out);
  void HandleReport(int node, const v1::WorkerReport& report, double now_s, JobActions& out);
  // A line for metrics.jsonl, when the cadence gives one; and the cadence for a round of
  // `world_size` ranks, said when it changes (metrics_cadence.h).
  void JournalMetric(std::optional<MetricsCadence::Line> line, JobActions& out);
  void JournalHeldMetrics(JobActions& out);  // every rank's held reports (a round's or job's end)
  void SayMetricsCadence(int world_size, JobActions& out);
  // Every worker of the round has started: say so once per round.
  void NoteAllStarted(double now_s, JobActions& out);
  // A rank reported stopped that died of a SIGKILL no agent had sent yet.
  bool KilledByOthers(const v1::WorkerEvent& ev, double now_s) const;
  void CheckLiveness(double now_s, double loop_lag_s, JobActions& out);
  void Say(const std::string& line, JobActions& out) const;

  // Failures and the job's end (job_state_end.cc).
  void NodeLost(int node, FailureClass cls, const std::string& why, double now_s, JobActions& out);
  // A failure of the job: recorded for the root cause, and the first one stops the job.
  void Fail(Outcome outcome, Failure failure, double now_s, JobActions& out);
  // A stop without a failure of a rank or node (a signal, a rendezvous that never closed).
  void FailWith(Outcome outcome, const std::string& reason, std::vector<std::string> detail,
                double now_s, JobActions& out);
  Failure RankFailure(FailureClass cls, int rank, double now_s) const;
  void CheckHealth(double now_s, JobActions& out);
  // A stall: every rank's stacks are asked for, and its root cause waits for them.
  void BeginStallInquiry(const Hang& h, double now_s, JobActions& out);
  // A rank's stacks: said, and noted for the failure and the inquiry.
  void HandleStacks(const v1::RankStacks& stacks, double now_s, JobActions& out);
  // The stacks are in (or their time is up, or the job's end cannot wait): the ranks outside a
  // collective are named as the stall's cause, and the root cause is announced.
  void ResolveStall(double now_s, JobActions& out);
  void ArmHealth(JobActions& out);
  void StopAll(double grace_s, const std::string& reason, double now_s, JobActions& out);
  void MaybeFinish(double now_s, JobActions& out);
  void Finish(double now_s, JobActions& out);
  v1::JobSummary Summarize(double now_s) const;

  // Stragglers (job_state_stragglers.cc): the interval's score, and the nodes it names or clears.
  void ScoreStragglers(double now_s, JobActions& out);
  // The round (or the job) ends: the nodes named are cleared, "the round ended".
  void ClearStragglers(double now_s, JobActions& out);
  void JournalStraggler(const StragglerChange& change, JobActions& out);

  // Restart rounds (job_state_rounds.cc).
  bool CanRestart(const Failure& f) const;
  // Stops the current round's workers; the agents stay for the next round.
  void BeginRoundStop(double now_s, JobActions& out);
  // Moves a restart on: the round stop ended (or timed out), the back-off passed.
  void AdvanceRestart(double now_s, JobActions& out);
  void DecideRestart(double now_s, JobActions& out);
  // Sends the next round now; its workers may start at `workers_start_at_s`.
  void StartNextRound(std::vector<int> ids, double now_s, double workers_start_at_s,
                      JobActions& out);
  // A new round's ranks and progress, on `ids` in node-rank order.
  void BeginRound(const RoundResult& round, const std::vector<int>& ids, double now_s);
  void GiveUp(const std::string& reason, double now_s, JobActions& out);
  // A message of a node no longer in the job, or of a round that has moved on: true when the
  // message is to be dropped (liveness still counts).
  bool DropStale(int node, const v1::AgentMessage& msg, JobActions& out);
  void HandleRoundEnded(int node, const v1::RoundEnded& ended, double now_s, JobActions& out);
  // Tells `node` to exit (excluded, lost, dropped spare) and forgets it.
  void Dismiss(int node, const std::string& event, const std::string& why, JobActions& out);
  void SpareLost(int node, const std::string& why, JobActions& out);
  bool Restarting() const { return rounds_.restarting(); }
  int current_round() const { return round_ ? round_->round : 0; }

  const JobConfig config_;
  // heartbeat_s x heartbeat_misses, as every agent got it in its JoinResponse.
  const LivenessPolicy liveness_;
  std::vector<std::string> launcher_programs_;
  int launchers_running_ = 0;
  std::optional<RoundResult> round_;
  double rendezvous_closed_at_s_ = 0;

  NodeTable nodes_;
  RankTable ranks_;                     // the current round's, by global rank
  StepClock steps_;
  FailureLedger ledger_;
  RoundCoordinator rounds_;
  ProgressMonitor monitor_;
  StragglerScore stragglers_;
  MetricsCadence metrics_;  // which reports become lines of metrics.jsonl, and when

  Outcome outcome_ = Outcome::kRunning;
  double health_armed_at_s_ = -1;
  std::vector<int> dump_ranks_;             // hung ranks, for the stop command
  StallInquiry inquiry_;                    // a stall's stacks, until its cause is named
  int signals_seen_ = 0;
  // Workers' output lines printed per second at most; the rest counted (line_budget.h).
  LineBudget output_budget_{10000};
  // output_budget_'s note on what it held back, when it has one (`force`: the job's end).
  void SayHeldBackOutput(double now_s, bool force, JobActions& out);
  int64_t joins_refused_ = 0;   // OnJoinRefused
  int64_t calls_refused_ = 0;   // OnCallRefused
  int64_t events_after_end_ = 0;  // worker events for a rank that already ended its round
  RelayMoves moves_;  // the nodes of a lost relay (OnRelayLost), until each is back
  bool all_started_reported_ = false;
  std::optional<double> stop_started_at_s_;
  std::optional<double> stop_deadline_s_;
  double last_summary_s_ = 0;
  bool finished_ = false;
  int exit_code_ = 0;
};

}  // namespace dlaunch
