// JobController: the I/O shell around JobState, on one event loop. It is the control
// service's handler: it runs the rendezvous (RendezvousHost) and the agents' sessions, starts
// the node launchers, feeds every event, stamped with the job's clock, into JobState, and
// applies the actions: printing, the job directory's journal, commands to agents, the
// node-launcher processes, the stop deadline and the end. The session protocol's rules (seq,
// the echo, resumed sessions, admission after the close) are SessionLedger's; time and timers
// come from a TimerClock, so tests move time by hand. Every method runs on the io_context's
// thread.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio.hpp>

#include "common/child_supervisor.h"
#include "common/clock.h"
#include "launcher/jobdir/job_directory.h"
#include "launcher/run/agent_logs.h"
#include "launcher/control/control_handler.h"
#include "launcher/job/job_state.h"
#include "launcher/run/rendezvous_host.h"
#include "launcher/job/session_ledger.h"

namespace dlaunch {

struct JobSettings {
  JobConfig job;
  JobDirectory dir;
  RendezvousConfig rendezvous;
  v1::JoinResponse join_template;  // the job-wide fields of every JoinResponse
  // Agents joining after the round closed wait as spares (max_restarts > 0 or nodes.spares).
  bool accept_spares = false;
  // The hosts the launch commands start agents on, in order (HostPlan::AgentHosts): with
  // job.node_launcher, what tells whose log is whose (AgentLogs).
  std::vector<std::string> agent_hosts;
};

class JobController final : public ControlHandler {
 public:
  // `clock` (AsioTimerClock on `io` in production) must outlive the controller; the job's
  // clock starts at its Now().
  JobController(boost::asio::io_context& io, TimerClock& clock, JobSettings settings,
                std::ostream& out, std::ostream& err);
  ~JobController() override;

  // Starts the node launchers (one process per command), the rendezvous deadline, ticks and
  // signal handling. Errors mean nothing runs.
  absl::Status Start(const std::vector<std::vector<std::string>>& launch_commands);
  // kExitOk, kExitJobFailed, kExitLaunchError or kExitInterrupted; valid once io.run() returned.
  int exit_code() const { return exit_code_; }
  // The live view's picture of the job now (JobState::Snapshot on the job's clock).
  v1::JobSnapshot Snapshot() const { return state_.Snapshot(Now()); }

  // ControlHandler.
  void HandleJoin(const Participant& participant, JoinReply reply) override;
  void HandleJoinCancelled(const std::string& agent_id, uint64_t join_call) override;
  void HandleSessionOpened(int session_id, int node_id,
                           std::shared_ptr<AgentSession> session) override;
  void HandleAgentMessage(int session_id, int node_id, const v1::AgentMessage& message) override;
  void HandleSessionEnded(int session_id, int node_id) override;
  void HandleSessionsMoving(const std::string& relay,
                            const std::vector<std::pair<int, int>>& sessions) override;
  void HandleRefused(const std::string& peer, const std::string& method) override;

 private:
  double Now() const;
  void Apply(const JobActions& actions);
  void Send(const std::vector<int>& nodes, const v1::LauncherCommand& command);
  void SendTo(int node, v1::LauncherCommand command);
  void SendStop(const dlaunch::SendStop& stop);
  void SendStartRound(const dlaunch::SendStartRound& start);
  // The StartRound of `start`'s i-th node.
  void SendStartRoundTo(const dlaunch::SendStartRound& start, size_t i);
  // Starts one node launcher per command, its output in logs/launcher-<i>.log.
  absl::Status StartLaunchers(const std::vector<std::vector<std::string>>& launch_commands);
  // `agent` has node id `node_id`: its launcher's log becomes logs/agent-<node_id>.log.
  void NameAgentLog(const Participant& agent, int node_id);
  void ArmStopDeadline(double at_s);
  void ArmHealthCheck(double at_s);
  // Re-arms `timer` (cancelling its earlier wait) to run `fn` at `at_s` on the job's clock.
  void ArmAt(std::optional<TimerClock::TimerId>& timer, double at_s, std::function<void()> fn);
  void CancelTimers();
  void Tick();
  void WaitForSignal();
  // A journal write failed: say so once, and keep the job running.
  void ReportJournalError(const absl::Status& status);
  void Finish(int exit_code);

  boost::asio::io_context& io_;
  TimerClock& clock_;
  const JobDirectory dir_;
  const v1::JoinResponse join_template_;  // for the StartRound of later rounds
  const bool accept_spares_;
  const std::string node_launcher_;
  const std::vector<std::string> agent_hosts_;
  std::ostream& out_;
  std::ostream& err_;
  const SteadyTime start_;
  JobState state_;
  RendezvousHost rendezvous_;
  JobJournal journal_;
  std::unique_ptr<ChildSupervisor> launchers_;  // node launchers (agents, mpiexec, srun)
  AgentLogs agent_logs_{{}};
  boost::asio::signal_set signals_;
  std::optional<TimerClock::TimerId> tick_timer_;
  SteadyTime tick_due_;  // when the pending tick is due
  std::optional<TimerClock::TimerId> stop_deadline_;
  std::optional<TimerClock::TimerId> health_check_;  // stalls, hangs at exit, a held-back root cause
  SessionLedger ledger_;
  // Each node's current session (SessionLedger decides which one that is), by node id.
  std::map<int, std::shared_ptr<AgentSession>> sessions_;
  bool journal_error_reported_ = false;
  bool first_tick_ = true;  // the first tick is called directly, not by the timer
  bool finished_ = false;
  int exit_code_ = 0;
};

}  // namespace dlaunch
