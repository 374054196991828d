#include "launcher/job/session_ledger.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace dlaunch {

bool SessionLedger::Open(int session_id, int node_id) {
  auto [it, added] = sessions_.try_emplace(node_id);
  const bool resumed = !added;
  it->second = Session{session_id, 0, resumed, resumed};
  return resumed;
}

bool SessionLedger::IsCurrent(int session_id, int node_id) const {
  auto it = sessions_.find(node_id);
  return it != sessions_.end() && it->second.id == session_id;
}

bool SessionLedger::End(int session_id, int node_id) {
  if (!IsCurrent(session_id, node_id)) return false;
  sessions_.erase(node_id);
  return true;
}

MessagePlan SessionLedger::OnMessage(int session_id, int node_id,
                                     const v1::AgentMessage& message) {
  MessagePlan plan;
  // seq counts per node across its sessions: after a move the agent sends again what it could
  // not be sure arrived, and what did arrive is dropped here. Unnumbered messages (0) pass.
  if (message.seq() != 0) {
    uint64_t& heard = heard_seq_[node_id];
    if (message.seq() <= heard) {
      ++messages_again_;
      plan.drop = true;
      return plan;
    }
    heard = message.seq();
  }
  auto it = sessions_.find(node_id);
  // A message still arriving on a replaced (or ended) session goes to JobState, but the echo
  // and the resume belong to the current session.
  if (it == sessions_.end() || it->second.id != session_id) return plan;
  Session& s = it->second;
  s.heard_ms = std::max(s.heard_ms, message.sent_ms());
  if (s.answer_heartbeat && message.has_heartbeat()) {
    s.answer_heartbeat = false;
    plan.answer = true;
  }
  if (s.resumed) {
    s.resumed = false;
    // The agent's round is behind the last StartRound for it: that one went with the relay.
    if (last_start_ && message.round() < last_start_->round.round) {
      const std::vector<int>& ids = last_start_->node_ids;
      auto at = std::find(ids.begin(), ids.end(), node_id);
      if (at != ids.end()) plan.resend_start = static_cast<size_t>(at - ids.begin());
    }
  }
  return plan;
}

std::optional<SessionEcho> SessionLedger::EchoFor(int node_id) const {
  auto it = sessions_.find(node_id);
  if (it == sessions_.end()) return std::nullopt;
  SessionEcho echo;
  echo.heard_ms = it->second.heard_ms;
  if (auto h = heard_seq_.find(node_id); h != heard_seq_.end()) echo.heard_seq = h->second;
  return echo;
}

int32_t StartAfterMs(double workers_start_at_s, double now_s) {
  const double ahead_s = workers_start_at_s - now_s;
  return ahead_s > 0 ? static_cast<int32_t>(std::ceil(ahead_s * 1e3)) : 0;
}

JoinAdmission AdmitJoin(const Participant& participant, bool closed, bool accept_spares,
                        bool room_for_spare, int expected_agents) {
  if (!closed) return {};
  // After the close an agent waits as a spare while the job has room for one; beyond the agents
  // it started (a flood of joins) it is refused and counted, so nothing is kept for it.
  if (accept_spares && !room_for_spare) {
    return {JoinRoute::kRefused,
            absl::StrCat("the job started ", expected_agents, " agent(s) and all of them are in it: ",
                         "agent ", participant.agent_id, " (host ", participant.host,
                         ") is one too many")};
  }
  // A spare; or an unfit agent, which the rendezvous names apart from the late.
  if (accept_spares || !UnfitReasons(participant).empty()) return {};
  return {JoinRoute::kRendezvousLate, ""};
}

}  // namespace dlaunch
