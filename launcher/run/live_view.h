// LiveView: the job's live state for the terminal table and for `dlaunch watch`. It sits
// between the control service and the job controller: every call is recorded in a LiveTracker,
// then handed on unchanged. Once a second it sends a snapshot to every watcher and redraws the
// table when there is a terminal; at the end it sends the last snapshot and erases the table.
// Every method runs on the io_context's thread.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio.hpp>

#include "launcher/run/control_handler.h"
#include "launcher/run/live_terminal.h"
#include "launcher/run/live_tracker.h"

namespace dlaunch {

class LiveView final : public ControlHandler, public WatchHandler {
 public:
  // `inner` gets every control call; `terminal` (may be null: not a terminal) shows the table.
  LiveView(boost::asio::io_context& io, std::string job_id, int nodes_expected,
           ControlHandler* inner, LiveTerminal* terminal);

  // Starts the once-a-second snapshots.
  void Start();
  // The job is over: watchers get the last snapshot (later ones get it at once), the table is
  // erased so the final report stays the last thing on the screen.
  void End(int exit_code);

  // ControlHandler: recorded, then handed to `inner`.
  void HandleJoin(const Participant& participant, JoinReply reply) override;
  void HandleJoinCancelled(const std::string& agent_id) override;
  void HandleSessionOpened(int session_id, int node_rank,
                           std::shared_ptr<AgentSession> session) override;
  void HandleAgentMessage(int session_id, int node_rank, const v1::AgentMessage& message) override;
  void HandleSessionEnded(int session_id, int node_rank) override;
  void HandleRefused(const std::string& peer, const std::string& method) override;

  // WatchHandler.
  void HandleWatch(std::shared_ptr<SnapshotSink> sink) override;

 private:
  double Now() const;
  void Tick();
  void Publish();

  boost::asio::io_context& io_;
  ControlHandler* const inner_;
  LiveTerminal* const terminal_;
  const std::chrono::steady_clock::time_point start_;
  LiveTracker tracker_;
  boost::asio::steady_timer timer_;
  std::vector<std::shared_ptr<SnapshotSink>> watchers_;
  bool ended_ = false;
};

}  // namespace dlaunch
