// Doctor: the launcher's side of `dlaunch doctor`. It starts one agent per node as a run does;
// each agent runs the job's preflight (docs/preflight.md) and joins with its results, which the
// doctor answers with `checks_only`, so the agent exits without running anything. It ends once
// every agent answered, or one died, or the join timeout passed, and renders the table.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <boost/asio.hpp>

#include "common/child_supervisor.h"
#include "launcher/control/control_handler.h"

namespace dlaunch {

struct DoctorReport {
  std::vector<Participant> nodes;        // in the order they answered
  std::vector<std::string> never_heard;  // node launchers that failed, calls refused
  bool timed_out = false;
};

class Doctor final : public ControlHandler {
 public:
  Doctor(boost::asio::io_context& io, double timeout_s);
  ~Doctor() override;

  // Starts one node-launcher process per command (output in `logs_dir`/launcher-<i>.log) and
  // the deadline.
  absl::Status Start(const std::vector<std::vector<std::string>>& launch_commands,
                     const std::string& logs_dir);
  const DoctorReport& report() const { return report_; }

  void HandleJoin(const Participant& participant, JoinReply reply) override;
  void HandleJoinCancelled(const std::string&, uint64_t) override {}
  void HandleSessionOpened(int, int, std::shared_ptr<AgentSession>) override {}
  void HandleAgentMessage(int, int, const v1::AgentMessage&) override {}
  void HandleSessionEnded(int, int) override {}
  void HandleRefused(const std::string& peer, const std::string& method) override;

 private:
  void MaybeEnd();

  boost::asio::io_context& io_;
  boost::asio::steady_timer deadline_;
  std::unique_ptr<ChildSupervisor> launchers_;
  int launchers_running_ = 0;
  DoctorReport report_;
  bool ended_ = false;
};

// The table: one row per node and check verdict, then one line per failed check and the
// slowest check. `expected` nodes were asked for.
std::string RenderDoctorReport(const DoctorReport& report, int expected);
// 0 when every expected node answered and passed every check, else 1.
int DoctorExitCode(const DoctorReport& report, int expected);

}  // namespace dlaunch
