// JobController: the I/O shell around JobState, on one event loop. It is the control
// service's handler: it runs the rendezvous (RendezvousHost) and the agents' sessions, starts
// the node launchers, feeds every event, stamped with the job's clock, into JobState, and
// applies the actions: printing, the job directory's journal, commands to agents, the
// node-launcher processes, the stop deadline and the end. Every method runs on the
// io_context's thread.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <ostream>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <boost/asio.hpp>

#include "common/child_supervisor.h"
#include "launcher/jobdir/job_directory.h"
#include "launcher/run/control_handler.h"
#include "launcher/run/job_state.h"
#include "launcher/run/rendezvous_host.h"

namespace dlaunch {

struct JobSettings {
  JobConfig job;
  JobDirectory dir;
  RendezvousConfig rendezvous;
  v1::JoinResponse join_template;  // the job-wide fields of every JoinResponse
  // Agents joining after the round closed wait as spares (max_restarts > 0 or nodes.spares).
  bool accept_spares = false;
};

class JobController final : public ControlHandler {
 public:
  JobController(boost::asio::io_context& io, JobSettings settings, std::ostream& out,
                std::ostream& err);
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
  void HandleJoinCancelled(const std::string& agent_id) override;
  void HandleSessionOpened(int session_id, int node_rank,
                           std::shared_ptr<AgentSession> session) override;
  void HandleAgentMessage(int session_id, int node_rank, const v1::AgentMessage& message) override;
  void HandleSessionEnded(int session_id, int node_rank) override;
  void HandleSessionsMoving(const std::string& relay,
                            const std::vector<std::pair<int, int>>& sessions) override;
  void HandleRefused(const std::string& peer, const std::string& method) override;

 private:
  struct OpenSession {
    int id = -1;
    std::shared_ptr<AgentSession> session;
    // The newest AgentMessage.sent_ms processed from this session, echoed in every command to
    // it as LauncherCommand.heard_ms: what renews the agent's lease (LivenessPolicy).
    int64_t heard_ms = 0;
    // It replaced a session that had not ended: its first message says whether the agent
    // missed the last StartRound (sent into a relay that went).
    bool resumed = false;
    // Its first heartbeat is answered at once: the echo is what confirms the agent's move,
    // which it must have within half the stop grace (docs/relays.md).
    bool answer_heartbeat = false;
  };

  double Now() const;
  void Apply(const JobActions& actions);
  void Send(const std::vector<int>& nodes, const v1::LauncherCommand& command);
  void SendTo(int node, v1::LauncherCommand command);
  void SendStop(const dlaunch::SendStop& stop);
  void SendStartRound(const dlaunch::SendStartRound& start);
  // The StartRound of `start`'s i-th node.
  void SendStartRoundTo(const dlaunch::SendStartRound& start, size_t i);
  void ArmStopDeadline(double at_s);
  void ArmHealthCheck(double at_s);
  void Tick();
  void WaitForSignal();
  // A journal write failed: say so once, and keep the job running.
  void ReportJournalError(const absl::Status& status);
  void Finish(int exit_code);

  boost::asio::io_context& io_;
  const JobDirectory dir_;
  const v1::JoinResponse join_template_;  // for the StartRound of later rounds
  const bool accept_spares_;
  std::ostream& out_;
  std::ostream& err_;
  const std::chrono::steady_clock::time_point start_;
  JobState state_;
  RendezvousHost rendezvous_;
  JobJournal journal_;
  std::unique_ptr<ChildSupervisor> launchers_;  // node launchers (agents, mpiexec, srun)
  boost::asio::signal_set signals_;
  boost::asio::steady_timer tick_timer_;
  boost::asio::steady_timer stop_deadline_;
  boost::asio::steady_timer health_check_;   // stalls, hangs at exit, a held-back root cause
  std::map<int, OpenSession> sessions_;  // by node id
  // The newest AgentMessage.seq processed from each node, in any of its sessions
  // (LauncherCommand.heard_seq): a message at or below it was sent again after a move.
  std::unordered_map<int, uint64_t> heard_seq_;
  int64_t messages_again_ = 0;
  // The last round's StartRound, to send again to an agent that missed it.
  std::optional<dlaunch::SendStartRound> last_start_;
  bool journal_error_reported_ = false;
  bool first_tick_ = true;  // the first tick is called directly, not by the timer
  bool finished_ = false;
  int exit_code_ = 0;
};

}  // namespace dlaunch
