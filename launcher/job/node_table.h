// NodeTable: every node the launcher knows of in one job, by node id (JoinResponse.node_id,
// stable across rounds): where it is, whether it is a member of the current round, a spare or
// gone, its agent's session, when it was last heard, and what its heartbeats said. The current
// round's members in node-rank order live here too, so node rank and node id are translated in
// one place. Pure: time comes in as seconds since the job started.
#pragma once

#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "dlaunch/control.pb.h"
#include "launcher/job/job_events.h"
#include "rendezvous/rendezvous_state.h"

namespace dlaunch {

enum class NodeStatus {
  kMember,  // has (or had, while a restart is decided) a place in the current round
  kSpare,   // waiting for a lost node's place in a later round
  kGone,    // excluded, lost or dropped: no longer in the job
};

enum class SessionState { kNotOpened, kOpen, kEnded };

struct NodeRecord {
  std::string host;
  std::string addr;
  Participant joined;          // as it joined: slots, and its first worker port
  int worker_port = 0;         // its freshest free port (RoundEnded, else its Join)
  NodeStatus status = NodeStatus::kMember;
  SessionState session_state = SessionState::kNotOpened;
  int session = -1;            // the current session's id; -1: never opened
  double session_ended_at_s = 0;
  double last_seen_s = 0;
  int workers_running = 0;
  bool told_to_exit = false;
  bool lost = false;           // counted lost (JobState::NodeLost): once, whatever else ends it
  int ended_round = -1;        // the latest round it reported ended (RoundEnded)
  std::vector<v1::GpuSample> gpus;  // its latest heartbeat's
  v1::HostSample health;            // its latest heartbeat's host sample
  double health_logged_at_s = -1;   // when its health last went into metrics.jsonl

  bool open() const { return session_state == SessionState::kOpen; }
  bool gone() const { return status == NodeStatus::kGone; }
  bool spare() const { return status == NodeStatus::kSpare; }
};

// Lookups by node id and the questions asked per message are O(log nodes) or O(1); only the
// periodic ones (liveness, the summary line, the snapshot) walk the table.
class NodeTable {
 public:
  // Round 0 closed: node i of the round gets node id i.
  void AddRound0(const RoundResult& round, double now_s);
  void AddSpare(int node_id, const Participant& p, double now_s);
  // The next round's members in node-rank order; spares among them become members.
  void SetMembers(std::vector<int> ids);

  // Ids not known yet are created (a message can outrun its join). Change sessions and status
  // through the methods below, which keep the counts.
  NodeRecord& at(int id) { return nodes_[id]; }
  const NodeRecord* Find(int id) const;
  const std::map<int, NodeRecord>& all() const { return nodes_; }
  const std::vector<int>& members() const { return members_; }

  void OpenSession(int id, int session, double now_s);
  // False for a session that was already replaced or ended.
  bool EndSession(int id, int session, double now_s);
  // Marks it gone; false when it already was.
  bool MarkGone(int id);

  // Its node rank in the current round; -1 when it is not a member of it.
  int NodeRankOf(int id) const;
  NodePlace PlaceOf(int id) const;
  std::map<int, std::string> Hosts() const;

  // Members and spares with an open session, not gone: the nodes that hear commands.
  std::vector<int> Reachable() const;
  // Members of the job (not spares, not gone) whose session is open.
  int MembersUp() const;
  int WorkersRunning() const;
  // A member in session has not been heard from for longer than `after_s`.
  bool AnyMemberSilent(double now_s, double after_s) const;
  bool AnyOpen() const { return open_ > 0; }
  // Not gone, with an open session (the nodes a restart can use).
  int Available() const;
  // Members and spares not gone, whatever their session.
  int NotGone() const { return static_cast<int>(nodes_.size()) - gone_; }

 private:
  std::map<int, NodeRecord> nodes_;
  std::vector<int> members_;  // node ids of the current round, in node-rank order
  std::unordered_map<int, int> rank_of_;  // node id -> its index in members_
  int open_ = 0;              // nodes whose session is open
  int gone_ = 0;              // nodes marked gone
};

}  // namespace dlaunch
