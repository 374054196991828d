// LiveView: the job's live state for the terminal table and for `dlaunch watch`. It keeps no
// model of its own: once a second it asks the job (JobState::Snapshot, through the job
// controller) for a snapshot, sends it to every watcher and redraws the table when there is a
// terminal; at the end it sends the last snapshot and erases the table. Every method runs on the
// io_context's thread.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include <boost/asio.hpp>

#include "launcher/control/control_handler.h"
#include "launcher/run/live_terminal.h"

namespace dlaunch {

class LiveView final : public WatchHandler {
 public:
  using SnapshotSource = std::function<v1::JobSnapshot()>;
  // `terminal` (may be null: not a terminal) shows the table.
  LiveView(boost::asio::io_context& io, SnapshotSource source, LiveTerminal* terminal);

  // Starts the once-a-second snapshots.
  void Start();
  // The job is over: watchers get the last snapshot (later ones get it at once), the table is
  // erased so the final report stays the last thing on the screen.
  void End(int exit_code);

  // WatchHandler.
  void HandleWatch(std::shared_ptr<SnapshotSink> sink) override;

 private:
  v1::JobSnapshot Take() const;
  void Tick();
  void Publish();

  SnapshotSource source_;
  LiveTerminal* const terminal_;
  boost::asio::steady_timer timer_;
  std::vector<std::shared_ptr<SnapshotSink>> watchers_;
  std::optional<int> ended_;  // dlaunch's exit code, once the job is over
};

}  // namespace dlaunch
