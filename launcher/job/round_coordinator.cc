#include "launcher/job/round_coordinator.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "common/liveness_policy.h"

namespace dlaunch {
namespace {

// SIGKILL of a worker's group takes effect this soon after the grace.
constexpr double kKillSlackS =
    std::chrono::duration<double>(LivenessPolicy::kKillSlack).count();

// Members still ending a round move its deadline at most this far: ends that trickle in one by
// one must not hold a restart up without bound.
constexpr double kMaxStopExtensionS = 30;

std::string TooFew(size_t left, int min_nodes) {
  return absl::StrCat("only ", left, " node(s) left, fewer than nodes.min (", min_nodes, ")");
}

}  // namespace

RoundCoordinator::RoundCoordinator(RestartSettings settings, int target_nodes, int min_nodes)
    : policy_(settings), settings_(settings), target_nodes_(target_nodes), min_nodes_(min_nodes) {}

void RoundCoordinator::BeginStop(double now_s, double wait_s) {
  detected_at_s_ = now_s;
  stop_deadline_s_ = now_s + wait_s;
  stop_latest_s_ = *stop_deadline_s_ + kMaxStopExtensionS;
  stop_cursor_ = 0;
}

void RoundCoordinator::NoteMemberEnded(double now_s, double slack_s) {
  if (!stop_deadline_s_) return;
  stop_deadline_s_ = std::max(*stop_deadline_s_, std::min(now_s + slack_s, stop_latest_s_));
}

void RoundCoordinator::Cancel() {
  stop_deadline_s_.reset();
  restart_at_s_.reset();
}

bool RoundCoordinator::TakeStopOver(const NodeTable& nodes, int round, double now_s) {
  if (!stop_deadline_s_) return false;
  // Members are checked in order from the first not yet seen ending: each message of the stop
  // moves the cursor on instead of walking every member again.
  const std::vector<int>& members = nodes.members();
  while (stop_cursor_ < members.size()) {
    const NodeRecord* n = nodes.Find(members[stop_cursor_]);
    // A member whose session has not opened yet may still: it is waited for until the deadline.
    // One counted lost (silent, or never opened its session) is not: it will not answer the
    // stop, and its workers are waited for by its lease (NoteWorkersMayRun), not by the stop.
    if (n && !n->gone() && !n->lost && n->session_state != SessionState::kEnded &&
        n->ended_round != round) {
      break;
    }
    ++stop_cursor_;
  }
  if (stop_cursor_ < members.size() && now_s < *stop_deadline_s_) return false;
  stop_deadline_s_.reset();
  return true;
}

std::vector<std::pair<int, std::string>> RoundCoordinator::MembersThatDidNotEnd(
    const NodeTable& nodes, int round) {
  std::vector<std::pair<int, std::string>> out;
  for (int id : nodes.members()) {
    const NodeRecord* n = nodes.Find(id);
    if (!n || n->gone()) continue;
    if (n->session_state == SessionState::kNotOpened) {
      out.emplace_back(id, "it never opened its session");
    } else if (!n->open()) {
      out.emplace_back(id, "its session ended");
    } else if (n->ended_round != round) {
      out.emplace_back(id, "it did not end its round in time");
    }
  }
  return out;
}

void RoundCoordinator::NoteWorkersMayRun(const NodeTable& nodes, int round, double closed_at_s,
                                         double cut_off_s, double grace_s) {
  for (int id : nodes.members()) {
    const NodeRecord* n = nodes.Find(id);
    if (!n || n->ended_round == round) continue;
    // One that never opened its session is counted from the round's start.
    double gone_s = std::max(n->last_seen_s, closed_at_s) + cut_off_s;
    if (n->session_state == SessionState::kEnded) {
      gone_s = std::min(gone_s, n->session_ended_at_s + grace_s + kKillSlackS);
    }
    workers_gone_by_s_ = std::max(workers_gone_by_s_, gone_s);
  }
}

RestartPlan RoundCoordinator::Decide(const NodeTable& nodes, const Failure& root, int round,
                                     double now_s) {
  RestartPlan plan;
  // A round that ran longer than the longest back-off was healthy: the next wait starts over.
  if (running_since_s_ && detected_at_s_ &&
      *detected_at_s_ - *running_since_s_ >= settings_.backoff_max_s) {
    policy_.OnHealthyRound();
  }
  running_since_s_.reset();
  plan.decision = policy_.OnFailure(root, checkpoint_step_, now_s);
  // Excluding a node is to give the job better odds, not to end it: a node the job cannot do
  // without (fewer than nodes.min left, spares counted) stays, and the crash-loop rule bounds it.
  int available = nodes.Available();
  for (int id : plan.decision.excluded) {
    const NodeRecord* n = nodes.Find(id);
    if (!n || n->gone()) continue;
    if (available - 1 < min_nodes_) {
      plan.exclusion_kept.push_back(id);
      continue;
    }
    --available;
    plan.excluded.push_back(id);
  }
  if (!plan.decision.restart) {
    plan.give_up = plan.decision.reason;
    return plan;
  }
  // Survivors keep their order (node ids follow the allocation's order); spares fill the
  // places of lost and excluded nodes, up to the first round's size.
  std::vector<int> spares;
  for (const auto& [id, n] : nodes.all()) {
    if (n.gone() || !n.open()) continue;
    if (std::find(plan.excluded.begin(), plan.excluded.end(), id) != plan.excluded.end()) continue;
    if (n.spare()) {
      spares.push_back(id);
    } else if (n.ended_round == round) {
      plan.next.push_back(id);
    }
  }
  for (int id : spares) {
    if (static_cast<int>(plan.next.size()) >= target_nodes_) break;
    plan.next.push_back(id);
    plan.promoted.push_back(id);
  }
  if (static_cast<int>(plan.next.size()) < min_nodes_) plan.give_up = TooFew(plan.next.size(), min_nodes_);
  return plan;
}

double RoundCoordinator::Schedule(std::vector<int> next, double restart_at_s) {
  next_ = std::move(next);
  restart_at_s_ = std::max(restart_at_s, workers_gone_by_s_);
  return *restart_at_s_;
}

std::optional<double> RoundCoordinator::send_at_s() const {
  if (!restart_at_s_) return std::nullopt;
  return *restart_at_s_ - kStartLeadS;
}

std::optional<RoundCoordinator::DueRound> RoundCoordinator::TakeDue(const NodeTable& nodes,
                                                                    double now_s) {
  if (!restart_at_s_ || now_s < *send_at_s()) return std::nullopt;
  const double start_at_s = *restart_at_s_;
  restart_at_s_.reset();
  // A node may have gone during the back-off.
  std::vector<int> ids;
  for (int id : next_) {
    const NodeRecord* n = nodes.Find(id);
    if (n && !n->gone() && n->open()) ids.push_back(id);
  }
  if (ids.empty() || static_cast<int>(ids.size()) < min_nodes_) {
    return DueRound{{}, TooFew(ids.size(), min_nodes_), start_at_s};
  }
  return DueRound{std::move(ids), "", start_at_s};
}

RoundResult RoundCoordinator::BuildRound(const NodeTable& nodes, const std::vector<int>& ids,
                                         int round) {
  std::vector<Participant> places;
  for (int id : ids) {
    const NodeRecord* n = nodes.Find(id);
    Participant p = n->joined;
    p.worker_port = n->worker_port;
    places.push_back(p);
  }
  return AssignRound(round, std::move(places), 0);
}

}  // namespace dlaunch
