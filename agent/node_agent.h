// NodeAgent: one per node. Joins the launcher's rendezvous, plans local ranks, runs the
// workers, serves their report socket, and keeps a session with the launcher (heartbeats,
// worker events, log lines up; stop commands down). Everything runs on one io_context thread.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio.hpp>

#include "agent/control_client.h"
#include "agent/gpu_discovery.h"
#include "agent/report_server.h"
#include "common/child_supervisor.h"
#include "dlaunch/control.pb.h"

namespace dlaunch {

struct AgentOptions {
  std::string control;          // launcher endpoint host:port
  std::string token;
  std::string host;             // "" = gethostname()
  std::string addr;             // "" = the local address that routes to the launcher
  int nproc = 0;                // 0 = one per visible GPU, else 1
  double join_timeout_s = 300;
  int tail_lines = 20;
};

class NodeAgent {
 public:
  NodeAgent(boost::asio::io_context& io, AgentOptions options);
  ~NodeAgent();

  // Joins and starts the workers; errors here mean nothing was started.
  absl::Status Start();
  // Exit code once the io_context has stopped: 0 when every worker succeeded.
  int exit_code() const { return exit_code_; }

 private:
  void OnCommand(const v1::LauncherCommand& cmd);
  void OnSessionClosed(const std::string& why);
  void OnChildExit(const ChildExit& e);
  void OnOutput(int rank, bool is_stderr, std::vector<std::string> lines);
  void OnReport(const v1::WorkerReport& r);
  void OnSignal(int sig);
  void Heartbeat();
  void StopWorkers(const std::string& why, std::chrono::milliseconds grace);
  void FinishIfDone();
  v1::AgentMessage Message() const;
  void Log(const std::string& line) const;

  boost::asio::io_context& io_;
  AgentOptions options_;
  std::unique_ptr<ControlClient> client_;
  std::unique_ptr<ChildSupervisor> supervisor_;
  std::unique_ptr<ReportServer> reports_;
  std::optional<boost::asio::signal_set> signals_;
  boost::asio::steady_timer heartbeat_timer_;
  std::optional<boost::asio::steady_timer> drain_timer_;
  bool reports_drained_ = false;
  v1::JoinResponse job_;
  std::string agent_id_;
  std::map<int, int> rank_of_pid_;
  std::map<int, v1::WorkerReport> pending_reports_;   // per rank, since the last heartbeat
  std::chrono::steady_clock::time_point last_from_launcher_;
  bool session_open_ = false;
  bool stopping_ = false;
  bool failed_ = false;
  bool finished_ = false;
  int signals_seen_ = 0;
  int exit_code_ = 0;
};

}  // namespace dlaunch
