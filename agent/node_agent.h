// NodeAgent: one per node, the I/O shell around AgentState. Joins the launcher's rendezvous,
// plans local ranks, runs the workers, serves their report socket, and keeps a session with
// the launcher (heartbeats, worker events, log lines, RoundEnded up; stop and StartRound down).
// One process runs any number of restart rounds, each with the place its StartRound gives; the
// session, report socket and GPU inventory outlive rounds. Every event goes to AgentState; the
// actions it returns are applied here. Everything runs on one io_context thread (the control
// client's threads post onto it), and nothing on it waits: stack dumps, the sweep of what the
// workers left behind and the kill of their cgroup are timer steps beside the heartbeats.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio.hpp>

#include "agent/core/agent_state.h"
#include "agent/control_client.h"
#include "agent/placement/gpu_discovery.h"
#include "agent/health/gpu_monitor.h"
#include "agent/health/host_monitor.h"
#include "agent/workers/job_cgroup.h"
#include "agent/placement/local_rank_plan.h"
#include "agent/health/oom_detector.h"
#include "agent/workers/orphan_sweeper.h"
#include "agent/workers/report_server.h"
#include "agent/health/stack_dumper.h"
#include "agent/workers/warm_start.h"
#include "agent/workers/worker_server_socket.h"
#include "agent/store/worker_store.h"
#include "common/child_supervisor.h"
#include "common/clock.h"
#include "dlaunch/control.pb.h"
#include "proto/control_tls.h"

namespace dlaunch {

struct AgentOptions {
  std::string control;          // launcher endpoint host:port (or a relay's)
  // The launcher itself, when `control` is a relay: where a broken session moves to.
  std::string control_fallback;
  JobCredentials credentials;   // the job token and the launcher's pinned certificate
  std::string host;             // "" = gethostname()
  std::string addr;             // "" = the local address that routes to the launcher
  int nproc = 0;                // 0 = one per visible GPU, else 1
  double join_timeout_s = 300;
  int tail_lines = 20;
};

class NodeAgent {
 public:
  // `gpu_monitor` samples the GPUs for the heartbeats; null: NVML on the GPUs this node sees.
  // `host_monitor` samples the node's health; null: one for the job directory and /tmp, made
  // when the agent learns the job directory (a spare's comes with its first round).
  NodeAgent(boost::asio::io_context& io, AgentOptions options,
            std::unique_ptr<GpuMonitor> gpu_monitor = nullptr,
            std::unique_ptr<HostMonitor> host_monitor = nullptr);
  ~NodeAgent();

  // Joins, opens the session and starts the first round's workers (a spare starts none);
  // errors here mean nothing was started.
  absl::Status Start();
  // Exit code once the io_context has stopped: 0 when every worker succeeded.
  int exit_code() const { return exit_code_; }

 private:
  // How long the agent waits for the launcher's answer to its preflight and its Join.
  std::chrono::milliseconds JoinTimeout() const;
  absl::StatusOr<v1::JoinResponse> Join(const GpuInventory& gpus,
                                        const std::vector<v1::CheckResult>& checks);
  // Before the agent has joined: when `call` through its relay failed with UNAVAILABLE (the relay
  // went) and the launcher's own address is known, says so, points the client there and returns
  // true, so the caller makes the call again. Once per agent.
  bool FallBackBeforeJoining(const char* call, const absl::Status& failed);
  // Its control address is a relay's, and the launcher's own is known (--control-fallback).
  bool HasFallback() const {
    return !options_.control_fallback.empty() && options_.control != options_.control_fallback;
  }
  void WatchSignals();
  // Reaps the adopted processes that exited (a worker's daemon ending on its own) on SIGCHLD.
  void WatchAdoptedExits();
  // Ends what the workers left behind (agent/workers/orphan_sweeper.h) and logs it: SIGTERM and a
  // grace, or, once fenced, SIGKILL at once; then `then` (at once when nothing was left, else
  // from a timer: the loop goes on meanwhile).
  void SweepOrphans(std::function<void()> then);
  // Keeps a timer armed for AgentState::lease_due() while the session is open.
  void ArmLeaseCheck();
  absl::Status StartReportServer(const std::string& socket_path);
  absl::Status OpenSession();
  // The session's callbacks, for `client` (the first session's, or the one it moved to).
  absl::Status OpenSessionOn(ControlClient& client);
  void OnSessionLost(const std::string& why, bool broken);
  // MoveSession: a new ControlClient to options_.control_fallback, opened beside the loop (its
  // stream's start waits for the connection), then AdoptMovedSession on the loop.
  void MoveSessionToFallback(const MoveSession& move);
  void AdoptMovedSession(std::unique_ptr<ControlClient> next, absl::Status opened);
  // The round's place (job_) planned onto this node: cached while the number of local ranks is
  // the same, as the rest of the request is the job's. Writes the plan to the job directory.
  const absl::StatusOr<std::vector<RankSlot>>& PlanRound();
  // Sends each worker's STARTED (or FAILED, when it could not start) event and logs it;
  // returns how many started.
  int ReportStarts(const std::vector<ChildSupervisor::StartRequest>& requests,
                   const std::vector<RankSlot>& plan,
                   const std::vector<absl::StatusOr<pid_t>>& started);

  // Events, each handed to state_.
  void OnCommand(const v1::LauncherCommand& cmd);
  void OnChildExit(const ChildExit& e);
  void OnOutput(int rank, bool is_stderr, std::vector<std::string> lines);
  void OnReport(const v1::WorkerReport& r);
  void OnTick();
  void ArmTick();

  // Actions.
  void Apply(const AgentActions& actions);
  // In-process restart's actions (node_agent_in_process.cc).
  template <typename T>
  static constexpr bool IsInProcessAction =
      std::is_same_v<T, LeaveRound> || std::is_same_v<T, RejoinRound> ||
      std::is_same_v<T, EndRanks> || std::is_same_v<T, StartRanks> ||
      std::is_same_v<T, NoteRankPath>;
  void ApplyInProcess(const LeaveRound& leave);
  void ApplyInProcess(const RejoinRound& rejoin);
  void ApplyInProcess(const EndRanks& end);
  void ApplyInProcess(const StartRanks& start);
  void ApplyInProcess(const NoteRankPath& path);
  // The requests and slots of `local_ranks` only (keep), or of all others (!keep).
  static void KeepOnly(const std::vector<int>& local_ranks, bool keep,
                       std::vector<ChildSupervisor::StartRequest>* requests,
                       std::vector<RankSlot>* slots);
  // A worker's line of the in-process restart's protocol (its pid's local rank).
  void OnRestartLine(pid_t pid, const v1::RestartLine& line);
  int LocalRankOfPid(pid_t pid) const;
  // Adopts the StartRound place (if one came) and starts its workers.
  void StartRoundWorkers(const StartWorkers& start);
  // restarts.warm_start (agent/workers/warm_start.h): starts this node's warm process, or starts it
  // again when it ended (the ranks of this round then start cold, and the log says why).
  void KeepWarmProcess();
  // RoundEnded with a fresh free port of this node (the next round's MASTER_PORT if it is node
  // 0), once what the round's workers left behind is swept.
  void ReportRoundEnded(int round);
  void Stop(const StopWorkers& stop);
  // The stacks of each listed rank on this node not yet recorded this round, to
  // stacks/rank-N.txt in the job directory (StackDumper), then AgentState::OnStacksDumped.
  void StartStackDump(const DumpStacks& dump);
  void Heartbeat();
  // Each running rank's CPU counters (agent/health/rank_cpu.h), for scripts without reports.
  void AddRankCpu(v1::Heartbeat* hb) const;
  // Each running rank's GPUs from the round's plan, when the heartbeat has GPU samples.
  void AddRankGpus(v1::Heartbeat* hb) const;
  void FlushPendingReports();
  void ReportWorkerExit(const SendWorkerExit& ev);
  void BeginDrain(const std::vector<int>& keep_open);
  // The report connections open from these local ranks' processes.
  int KeptConnections(const std::vector<int>& local_ranks) const;
  void ReportsDrained();
  // Sweeps what the workers left, then Close.
  void Finish(int code);
  // Closes the session and ends the loop.
  void Close();

  v1::AgentMessage Message() const;
  // Queues `msg` for the launcher. The writer is woken once the loop has done what it is doing,
  // so what one pass sends (a round's STARTED events, a stop's exits and RoundEnded) goes up in
  // one write (proto/agent_batch.h).
  void Send(v1::AgentMessage msg);
  void Log(const std::string& line) const;

  boost::asio::io_context& io_;
  AgentOptions options_;
  AsioTimerClock clock_;
  OrphanSweeper sweeper_;  // what the workers left: swept at each round's end and the exit
  std::unique_ptr<GpuMonitor> gpu_monitor_;
  std::unique_ptr<HostMonitor> host_monitor_;
  bool host_monitor_given_ = false;
  std::string host_monitor_dir_;  // the job directory the one made here watches
  OomDetector oom_;  // names a worker the kernel's OOM killer took
  std::unique_ptr<StackDumper> stack_dumper_;
  std::optional<AgentState> state_;   // from the JoinResponse on
  std::unique_ptr<ControlClient> client_;
  std::thread move_thread_;  // opens the moved session; joined before the agent goes
  std::unique_ptr<Zygote> zygote_;  // restarts.warm_start's warm process; null: none
  std::unique_ptr<WarmProcessLauncher> warm_launcher_;  // supervisor_'s launcher when warm
  std::unique_ptr<ChildSupervisor> supervisor_;
  std::unique_ptr<ReportServer> reports_;
  std::unique_ptr<WorkerStoreServer> worker_store_;  // node 0's, with rendezvous.worker_store: agent
  std::unique_ptr<JobCgroup> cgroup_;  // the workers' cgroup; null where the node allows none
  std::optional<boost::asio::signal_set> signals_;
  std::optional<boost::asio::signal_set> sigchld_;  // WatchAdoptedExits
  std::optional<TimerClock::TimerId> heartbeat_timer_;
  std::optional<TimerClock::TimerId> drain_timer_;
  std::optional<TimerClock::TimerId> lease_timer_;  // ArmLeaseCheck
  GpuInventory gpus_;
  v1::JoinResponse job_;               // the place of the agent's current round
  std::optional<v1::JoinResponse> next_place_;  // a StartRound's, until AgentState accepts it
  int node_id_ = 0;                    // from the JoinResponse; stable across rounds
  std::string report_socket_;
  std::unique_ptr<WorkerSocketDir> worker_sockets_;  // the ranks' TORCH_WORKER_SERVER_SOCKETs
  int planned_local_world_size_ = -1;
  absl::StatusOr<std::vector<RankSlot>> plan_ = std::vector<RankSlot>{};
  std::string plan_note_;
  std::string agent_id_;
  // Per round: cleared when the next round's workers start.
  std::map<int, int> rank_of_pid_;
  // In-process restart: why each local rank about to start anew does (its started event's).
  std::map<int, std::string> respawn_why_;
  // In-process restart: when each kept local rank was sent its place ("join"), for the log.
  std::map<int, SteadyTime> join_sent_;
  std::map<int, v1::WorkerReport> pending_reports_;   // per rank, since the last heartbeat
  std::map<int, int64_t> output_lines_;                // per rank, since it started
  std::set<int> dumped_ranks_;                         // stacks recorded once per rank
  int exit_code_ = 0;
  bool wake_posted_ = false;  // a Wake of the client's writer is on the loop's queue
};

}  // namespace dlaunch
