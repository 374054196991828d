// The live view's picture of the job (v1::JobSnapshot, for the terminal table and `dlaunch
// watch`), read from the launcher's own model: the NodeTable (members, spares, gone nodes,
// sessions, heartbeats), the current round (world size, node ranks) and the ranks' progress
// as JobState keeps them. There is no second model: after a restart the table shows the new
// round's members, slots and world size, and what JobState dropped as stale is never shown.
// Pure: time comes in as seconds since the job started.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "dlaunch/control.pb.h"
#include "launcher/job/job_view.h"
#include "launcher/job/node_table.h"
#include "launcher/job/relay_moves.h"
#include "rendezvous/rendezvous_state.h"

namespace dlaunch {

// The job's step over time, for the ETA: the highest step any rank reported, when it was first
// seen above 0 and when it last moved. The ETA counts down between steps, so it keeps moving
// through phases without steps (an evaluation, a checkpoint) instead of freezing.
class StepClock {
 public:
  void Note(int64_t step, int64_t total_steps, double now_s);
  int64_t step() const { return last_.second; }
  int64_t total_steps() const { return total_steps_; }
  // Seconds left at the mean step rate so far, less the time since the last step; -1: unknown.
  double EtaS(double now_s) const;

 private:
  int64_t total_steps_ = 0;
  std::optional<std::pair<double, int64_t>> first_;
  std::pair<double, int64_t> last_{0, 0};
};

struct SnapshotInputs {
  std::string job_id;
  int nodes_expected = 0;
  const RoundResult* round = nullptr;   // null until the rendezvous closed
  const NodeTable* nodes = nullptr;
  const std::map<int, RankProgress>* ranks = nullptr;  // the current round's, by global rank
  const StepClock* steps = nullptr;
  double silent_after_s = 4;            // LivenessPolicy::silent_after()
  // Nodes whose session went with a lost relay and has not opened again (JobState::OnRelayLost).
  const RelayMoves* moving = nullptr;
  std::optional<int> exit_code;         // set once the job has finished
};

v1::JobSnapshot BuildJobSnapshot(const SnapshotInputs& in, double now_s);

}  // namespace dlaunch
