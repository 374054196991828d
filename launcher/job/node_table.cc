#include "launcher/job/node_table.h"

#include <algorithm>
#include <utility>

namespace dlaunch {

void NodeTable::AddRound0(const RoundResult& round, double now_s) {
  for (size_t i = 0; i < round.nodes.size(); ++i) {
    NodeRecord& n = nodes_[static_cast<int>(i)];
    n.host = round.nodes[i].host;
    n.addr = round.nodes[i].addr;
    n.joined = round.nodes[i];
    n.worker_port = round.nodes[i].worker_port;
    n.status = NodeStatus::kMember;
    if (n.session_state == SessionState::kNotOpened) n.last_seen_s = now_s;
    rank_of_[static_cast<int>(i)] = static_cast<int>(members_.size());
    members_.push_back(static_cast<int>(i));
  }
}

void NodeTable::AddSpare(int node_id, const Participant& p, double now_s) {
  NodeRecord& n = nodes_[node_id];
  n.host = p.host;
  n.addr = p.addr;
  n.joined = p;
  n.worker_port = p.worker_port;
  n.status = NodeStatus::kSpare;
  n.last_seen_s = now_s;
}

void NodeTable::SetMembers(std::vector<int> ids) {
  for (int id : ids) {
    NodeRecord& n = nodes_[id];
    if (n.status == NodeStatus::kSpare) n.status = NodeStatus::kMember;
  }
  members_ = std::move(ids);
  rank_of_.clear();
  for (size_t i = 0; i < members_.size(); ++i) rank_of_[members_[i]] = static_cast<int>(i);
}

const NodeRecord* NodeTable::Find(int id) const {
  auto it = nodes_.find(id);
  return it == nodes_.end() ? nullptr : &it->second;
}

void NodeTable::OpenSession(int id, int session, double now_s) {
  NodeRecord& n = nodes_[id];
  if (!n.open()) ++open_;
  n.session = session;
  n.session_state = SessionState::kOpen;
  n.last_seen_s = now_s;
}

bool NodeTable::EndSession(int id, int session, double now_s) {
  NodeRecord& n = nodes_[id];
  if (n.session != session || n.session_state != SessionState::kOpen) return false;
  n.session_state = SessionState::kEnded;
  --open_;
  n.session_ended_at_s = now_s;
  n.workers_running = 0;
  return true;
}

bool NodeTable::MarkGone(int id) {
  NodeRecord& n = nodes_[id];
  if (n.gone()) return false;
  n.status = NodeStatus::kGone;
  ++gone_;
  return true;
}

int NodeTable::NodeRankOf(int id) const {
  auto it = rank_of_.find(id);
  return it == rank_of_.end() ? -1 : it->second;
}

NodePlace NodeTable::PlaceOf(int id) const {
  const NodeRecord* n = Find(id);
  return NodePlace{id, NodeRankOf(id), n ? n->host : ""};
}

std::map<int, std::string> NodeTable::Hosts() const {
  std::map<int, std::string> hosts;
  for (const auto& [id, n] : nodes_) hosts[id] = n.host;
  return hosts;
}

std::vector<int> NodeTable::Reachable() const {
  std::vector<int> ids;
  for (const auto& [id, n] : nodes_) {
    if (!n.gone() && n.open()) ids.push_back(id);
  }
  return ids;
}

int NodeTable::MembersUp() const {
  int up = 0;
  for (const auto& [id, n] : nodes_) up += n.open() && n.status == NodeStatus::kMember;
  return up;
}

int NodeTable::WorkersRunning() const {
  int running = 0;
  for (const auto& [id, n] : nodes_) {
    if (n.open() && n.status == NodeStatus::kMember) running += n.workers_running;
  }
  return running;
}

bool NodeTable::AnyMemberSilent(double now_s, double after_s) const {
  for (const auto& [id, n] : nodes_) {
    if (n.status == NodeStatus::kMember && n.open() && now_s - n.last_seen_s > after_s) return true;
  }
  return false;
}

int NodeTable::Available() const {
  int available = 0;
  for (const auto& [id, n] : nodes_) available += !n.gone() && n.open();
  return available;
}

}  // namespace dlaunch
