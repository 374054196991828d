// JobController: runs one job from the launcher's side. It starts the node launchers, follows
// the rendezvous and every agent's session, shows progress, decides the job's end (all ranks
// succeeded, a rank failed, an agent was lost, Ctrl-C), stops every node, and writes the job
// directory's events, metrics and summary. All state lives on the io_context's thread; the
// SessionHandler methods (called on gRPC threads) only post to it.
#pragma once

#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <boost/asio.hpp>

#include "common/child_supervisor.h"
#include "launcher/run/control_service.h"
#include "launcher/spec/job_spec.h"

namespace dlaunch {

struct JobSettings {
  JobSpec spec;
  std::string job_id;
  std::string job_dir;
  std::vector<std::string> hosts;            // node-rank order the rendezvous expects
  std::string node_launcher;
};

class JobController : public SessionHandler {
 public:
  JobController(boost::asio::io_context& io, JobSettings settings, std::ostream& out,
                std::ostream& err);
  ~JobController() override;

  void set_service(ControlService* service) { service_ = service; }
  // Starts the node launchers (one process per command), timers and signal handling.
  // Errors mean nothing runs.
  absl::Status Start(std::vector<std::vector<std::string>> launch_commands);
  // 0 success, 1 job failed, 3 launch error, 130 interrupted. Valid once io.run() returned.
  int exit_code() const { return exit_code_; }

  // SessionHandler (gRPC threads).
  void OnJoined(const Participant& p, int joined, int expected) override;
  void OnRendezvousClosed(const RoundResult& result) override;
  void OnRendezvousFailed(const absl::Status& status) override;
  void OnSessionOpened(std::shared_ptr<AgentSession> session) override;
  void OnAgentMessage(const std::shared_ptr<AgentSession>& session,
                      const v1::AgentMessage& msg) override;
  void OnSessionEnded(const std::shared_ptr<AgentSession>& session) override;
  void OnRefused(const std::string& peer, const std::string& method) override;

 private:
  enum class Outcome { kRunning, kSucceeded, kFailed, kLaunchError, kInterrupted };
  struct NodeState {
    std::string host;
    std::string addr;
    std::shared_ptr<AgentSession> session;
    std::chrono::steady_clock::time_point last_seen;
    bool session_ended = false;
    int workers_running = 0;
  };
  struct RankState {
    int node = -1;
    int pid = 0;
    v1::WorkerEvent::State state = v1::WorkerEvent::STATE_UNSPECIFIED;
    int64_t samples = 0;
    double busy_s = 0;             // sum of report intervals
    int64_t step = 0;
    double loss = 0;
    bool has_loss = false;
    std::optional<double> test_accuracy;
    double recent_rate = 0;        // samples/s of its latest report
  };

  void HandleMessage(int node, const v1::AgentMessage& msg);
  void HandleWorkerEvent(int node, const v1::WorkerEvent& ev);
  void HandleReport(int node, const v1::WorkerReport& r);
  void NodeLost(int node, const std::string& why);
  void Fail(Outcome outcome, const std::string& reason, std::vector<std::string> detail = {});
  void StopAll(std::chrono::milliseconds grace, const std::string& reason);
  void OnSignal(int sig);
  void Tick();
  void PrintSummaryLine();
  void MaybeFinish();
  void Finish();
  void OnLauncherExit(const ChildExit& e);
  void Event(const std::string& json);
  void Say(const std::string& line);
  double Elapsed() const;

  boost::asio::io_context& io_;
  JobSettings s_;
  std::vector<std::vector<std::string>> launch_commands_;
  std::ostream& out_;
  std::ostream& err_;
  ControlService* service_ = nullptr;
  std::unique_ptr<ChildSupervisor> launchers_;   // node-launcher processes (agents, mpiexec, srun)
  boost::asio::signal_set signals_;
  boost::asio::steady_timer tick_timer_;
  boost::asio::steady_timer stop_deadline_;
  std::ofstream events_;
  std::ofstream metrics_;
  const std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_summary_;
  std::chrono::steady_clock::time_point join_deadline_;
  std::optional<std::chrono::steady_clock::time_point> rendezvous_closed_at_;
  std::optional<std::chrono::steady_clock::time_point> stop_started_at_;

  std::optional<RoundResult> round_;
  std::map<int, NodeState> nodes_;          // by node rank
  std::map<int, RankState> ranks_;          // by global rank
  int launchers_running_ = 0;
  Outcome outcome_ = Outcome::kRunning;
  std::string failure_;
  std::vector<std::string> failure_detail_;
  int signals_seen_ = 0;
  bool finished_ = false;
  int exit_code_ = 0;
};

}  // namespace dlaunch
