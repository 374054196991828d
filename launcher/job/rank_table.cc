#include "launcher/job/rank_table.h"

namespace dlaunch {

std::vector<int> RankTable::BeginRound(const RoundResult& round, const std::vector<int>& ids) {
  ranks_.clear();
  unfinished_by_node_.clear();
  started_ = 0;
  succeeded_ = 0;
  std::vector<int> all;
  for (size_t i = 0; i < ids.size() && i < round.assignments.size(); ++i) {
    for (int k = 0; k < round.assignments[i].local_world_size; ++k) {
      const int rank = round.assignments[i].rank_offset + k;
      ranks_[rank].node = ids[i];
      ++unfinished_by_node_[ids[i]];
      all.push_back(rank);
    }
  }
  return all;
}

RankProgress& RankTable::Of(int rank, int node) {
  auto [it, inserted] = ranks_.try_emplace(rank);
  if (inserted) {
    it->second.node = node;
    ++unfinished_by_node_[node];
  }
  return it->second;
}

const RankProgress* RankTable::Find(int rank) const {
  auto it = ranks_.find(rank);
  return it == ranks_.end() ? nullptr : &it->second;
}

void RankTable::SetState(RankProgress& rank, v1::WorkerEvent::State state) {
  const v1::WorkerEvent::State before = rank.state;
  rank.state = state;
  started_ += before == v1::WorkerEvent::STATE_UNSPECIFIED && state != before;
  succeeded_ += (state == v1::WorkerEvent::SUCCEEDED) - (before == v1::WorkerEvent::SUCCEEDED);
  unfinished_by_node_[rank.node] += WorkerEnded(before) - WorkerEnded(state);
}

bool RankTable::Unfinished(int node) const {
  auto it = unfinished_by_node_.find(node);
  return it != unfinished_by_node_.end() && it->second > 0;
}

}  // namespace dlaunch
