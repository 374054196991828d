#include "launcher/job/relay_moves.h"

namespace dlaunch {

void RelayMoves::Lost(const std::string& relay, const std::vector<int>& nodes, double now_s) {
  groups_.push_back({relay, now_s, 0});
  const size_t group = groups_.size() - 1;
  for (int node : nodes) {
    auto [it, added] = group_of_.try_emplace(node, group);
    if (!added) {
      if (it->second == group) continue;  // listed twice
      --groups_[it->second].left;
      it->second = group;
    }
    ++groups_[group].left;
  }
}

RelayMoves::Resumed RelayMoves::Resume(int node, double now_s) {
  Resumed r;
  auto it = group_of_.find(node);
  if (it == group_of_.end()) return r;
  Group& group = groups_[it->second];
  r.after_s = now_s - group.since_s;
  r.relay = group.relay;
  r.relay_back = --group.left == 0;
  group_of_.erase(it);
  return r;
}

}  // namespace dlaunch
