// RankTable: the current round's ranks by global rank, what the launcher knows of each
// (RankProgress: its node, state, samples, step, loss), and the counts kept as their states
// change (ranks started, ranks succeeded, unfinished ranks per node), so no message walks every
// rank. A rank's state changes only through SetState, which keeps the counts. Pure.
#pragma once

#include <map>
#include <vector>

#include "launcher/job/job_view.h"
#include "rendezvous/rendezvous_state.h"

namespace dlaunch {

class RankTable {
 public:
  // A new round: every rank of `round` placed on the node of `ids` (node-rank order) and none
  // started. Returns the ranks, in order.
  std::vector<int> BeginRound(const RoundResult& round, const std::vector<int>& ids);
  // The rank's progress, created for `node` when the round did not place it (a rank outside
  // the round's places: counted with the node that sent it).
  RankProgress& Of(int rank, int node);
  const RankProgress* Find(int rank) const;
  // Moves `rank` (one of this table's) to `state`, keeping the counts.
  void SetState(RankProgress& rank, v1::WorkerEvent::State state);

  int started() const { return started_; }      // ranks that reported any state
  int succeeded() const { return succeeded_; }
  // `node` has ranks not yet succeeded, failed or stopped.
  bool Unfinished(int node) const;
  const std::map<int, RankProgress>& all() const { return ranks_; }

 private:
  std::map<int, RankProgress> ranks_;
  int started_ = 0;
  int succeeded_ = 0;
  std::map<int, int> unfinished_by_node_;
};

}  // namespace dlaunch
