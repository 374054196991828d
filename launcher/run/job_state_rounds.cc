// JobState's restart rounds: a failed round is stopped with the agents kept, the round's end
// is awaited (RoundEnded from every live member), RestartPolicy decides, and the next round is
// built from the survivors and the spares. See docs/failures.md, "Restarts".
#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "launcher/run/job_events.h"
#include "launcher/run/job_state.h"
#include "launcher/run/root_cause.h"

namespace dlaunch {
namespace {

int Ms(double seconds) { return static_cast<int>(seconds * 1000); }

// A member that has not sent RoundEnded this long after the stop's grace counts as lost.
constexpr double kRoundEndSlackS = 2;
// SIGKILL of a worker's group takes effect this soon after the grace.
constexpr double kKillSlackS =
    std::chrono::duration<double>(LivenessPolicy::kKillSlack).count();

}  // namespace

JobActions JobState::OnSpareJoined(const Participant& p, int node_id, double now_s) {
  JobActions out;
  Node& n = nodes_[node_id];
  n.host = p.host;
  n.addr = p.addr;
  n.joined = p;
  n.worker_port = p.worker_port;
  n.spare = true;
  n.last_seen_s = now_s;
  Say(absl::StrCat("spare joined: ", p.host, " (", p.addr, "), node ", node_id, ", ", p.slots,
                   " slot(s)"),
      out);
  out.push_back(AppendEvent{SpareJoinedEvent(current_round(), node_id, p)});
  return out;
}

NodePlace JobState::PlaceOf(int node) const {
  auto it = nodes_.find(node);
  return NodePlace{node, NodeRankOf(node), it == nodes_.end() ? "" : it->second.host};
}

int JobState::NodeRankOf(int node) const {
  auto it = std::find(members_.begin(), members_.end(), node);
  return it == members_.end() ? -1 : static_cast<int>(it - members_.begin());
}

bool JobState::CanRestart(const Failure& f) const {
  // A hang at exit comes after ranks finished their work: a new round would redo it. A launch
  // error or a signal to the launcher is not the job's failure to retry.
  return config_.restarts.max_restarts > 0 && round_ && signals_seen_ == 0 &&
         f.cls != FailureClass::kLaunchError && f.cls != FailureClass::kExitHang;
}

void JobState::BeginRoundStop(double now_s, JobActions& out) {
  restart_detected_at_s_ = now_s;
  // Agents record hung ranks' stacks before they stop them, within config_.stack_dump_s.
  const double dump_s = dump_ranks_.empty() ? 0 : config_.stack_dump_s;
  const double wait = config_.stop_grace_s + kRoundEndSlackS + dump_s;
  round_stop_ = RoundStop{now_s + wait};
  SendStop stop{{}, Ms(config_.stop_grace_s), "restarting", dump_ranks_, current_round(), false,
                Ms(dump_s)};
  for (int id : members_) {
    if (SessionOpen(nodes_[id])) stop.nodes.push_back(id);
  }
  if (!stop.nodes.empty()) out.push_back(std::move(stop));
  out.push_back(AppendEvent{RoundStoppingEvent(current_round(), now_s)});
  ArmHealth(out);
}

bool JobState::DropStale(int node, const v1::AgentMessage& msg, JobActions& out) {
  Node& n = nodes_[node];
  if (n.gone) {
    // Excluded or dropped, and back: it may never act in the job again.
    if (!n.told_to_exit) {
      n.told_to_exit = true;
      out.push_back(SendStop{{node}, 0, "no longer in the job", {}, msg.round(), true});
    }
    return true;
  }
  if (msg.round() == current_round()) return false;
  // A late message of a stopped round, or a spare's heartbeat: liveness only.
  return msg.body_case() != v1::AgentMessage::kLog;
}

void JobState::HandleRoundEnded(int node, const v1::RoundEnded& ended, double now_s,
                                JobActions& out) {
  Node& n = nodes_[node];
  if (ended.round() != current_round()) return;
  n.ended_round = ended.round();
  if (ended.worker_port() > 0) n.worker_port = ended.worker_port();
  n.workers_running = 0;
  AdvanceRestart(now_s, out);
}

void JobState::Dismiss(int node, const std::string& event, const std::string& why,
                       JobActions& out) {
  Node& n = nodes_[node];
  if (n.gone) return;
  n.gone = true;
  out.push_back(AppendEvent{NodeDismissedEvent(current_round(), event, node, n.host, why)});
  if (SessionOpen(n) && !n.told_to_exit) {
    n.told_to_exit = true;
    out.push_back(SendStop{{node}, Ms(config_.stop_grace_s), why, {}, current_round(), true});
  }
}

void JobState::SpareLost(int node, const std::string& why, JobActions& out) {
  Say(absl::StrCat("spare node ", node, " (", nodes_[node].host, ") lost: ", why), out);
  Dismiss(node, "spare_lost", why, out);
}

void JobState::AdvanceRestart(double now_s, JobActions& out) {
  if (outcome_ != Outcome::kRunning) return;
  if (round_stop_) {
    bool all_ended = true;
    for (int id : members_) {
      const Node& n = nodes_[id];
      // A member whose session has not opened yet may still: it is waited for until the deadline.
      all_ended &= n.gone || n.session_ended || n.ended_round == current_round();
    }
    if (!all_ended && now_s < round_stop_->deadline_s) return;
    round_stop_.reset();
    DecideRestart(now_s, out);
    return;
  }
  if (restart_at_s_ && now_s >= *restart_at_s_) {
    restart_at_s_.reset();
    StartNextRound(now_s, out);
  }
}

void JobState::DecideRestart(double now_s, JobActions& out) {
  const Failure root = PickRootCause(failures_).root;
  Announce(now_s, true, out);
  DropMembersThatDidNotEnd(out);
  // A round that ran longer than the longest back-off was healthy: the next wait starts over.
  if (round_running_since_s_ && restart_detected_at_s_ &&
      *restart_detected_at_s_ - *round_running_since_s_ >= config_.restarts.backoff_max_s) {
    policy_.OnHealthyRound();
  }
  round_running_since_s_.reset();
  const RestartDecision d = policy_.OnFailure(root, checkpoint_step_, now_s);
  // Excluding a node is to give the job better odds, not to end it: a node the job cannot do
  // without (fewer than nodes.min left, spares counted) stays, and the crash-loop rule bounds it.
  int available = 0;
  for (const auto& [id, n] : nodes_) available += !n.gone && SessionOpen(n);
  for (int id : d.excluded) {
    if (!nodes_.count(id) || nodes_[id].gone) continue;
    if (available - 1 < config_.min_nodes) {
      out.push_back(AppendEvent{ExclusionSkippedEvent(
          current_round(), id, "fewer than nodes.min nodes would remain")});
      continue;
    }
    --available;
    Say(absl::StrCat("node ", id, " (", nodes_[id].host, ") excluded: it failed ",
                     config_.restarts.node_failure_limit, " times"),
        out);
    Dismiss(id, "node_excluded", "failed too often", out);
  }
  out.push_back(AppendEvent{RestartDecisionEvent(
      current_round(), d.restart ? "restart" : d.crash_loop ? "crash loop" : "give up", d.reason,
      d.restarts_used, root)});
  if (!d.restart) {
    GiveUp(d.reason, now_s, out);
    return;
  }
  // Survivors keep their order (node ids follow the allocation's order); spares fill the
  // places of lost and excluded nodes, up to the first round's size.
  std::vector<int> next;
  std::vector<int> spares;
  for (const auto& [id, n] : nodes_) {
    if (n.gone || !SessionOpen(n)) continue;
    if (n.spare) {
      spares.push_back(id);
    } else if (n.ended_round == current_round()) {
      next.push_back(id);
    }
  }
  const size_t target = config_.hosts.size();
  for (int id : spares) {
    if (next.size() >= target) break;
    next.push_back(id);
    Say(absl::StrCat("spare node ", id, " (", nodes_[id].host, ") takes a lost node's place"), out);
    out.push_back(AppendEvent{SparePromotedEvent(current_round() + 1, id, nodes_[id].host)});
  }
  if (static_cast<int>(next.size()) < config_.min_nodes) {
    GiveUp(absl::StrCat("only ", next.size(), " node(s) left, fewer than nodes.min (",
                        config_.min_nodes, ")"),
           now_s, out);
    return;
  }
  next_members_ = next;
  restart_at_s_ = std::max(d.restart_at_s, workers_gone_by_s_);
  Say(absl::StrFormat("restarting: round %d (%s)%s, %d node(s)%s", current_round() + 1, d.reason,
                      *restart_at_s_ > now_s
                          ? absl::StrFormat(" in %.1f s", *restart_at_s_ - now_s)
                          : std::string(),
                      static_cast<int>(next.size()),
                      workers_gone_by_s_ > d.restart_at_s
                          ? ", once the lost nodes' workers are surely stopped"
                          : ""),
      out);
  out.push_back(AppendEvent{RestartEvent(current_round() + 1, d.restarts_used,
                                         config_.restarts.max_restarts,
                                         std::max(0.0, d.restart_at_s - now_s), next)});
  AdvanceRestart(now_s, out);
  ArmHealth(out);
}

void JobState::DropMembersThatDidNotEnd(JobActions& out) {
  NoteWorkersMayRun();
  // Members that did not end their round in time, or whose session broke, are lost.
  for (int id : members_) {
    const Node& n = nodes_[id];
    if (n.gone) continue;
    if (n.session < 0) {
      Dismiss(id, "node_dropped", "it never opened its session", out);
    } else if (!SessionOpen(n)) {
      Dismiss(id, "node_dropped", "its session ended", out);
    } else if (n.ended_round != current_round()) {
      Dismiss(id, "node_dropped", "it did not end its round in time", out);
    }
  }
}

void JobState::NoteWorkersMayRun() {
  // A member that sent no RoundEnded for this round may still run workers. Whether it hears
  // the launcher or not, its agent stops them at the latest a lease after the last message the
  // launcher heard from it (LivenessPolicy): its lease runs from the newest message echoed.
  // One whose session ended saw its stream end too (no keepalive ends a silent stream sooner),
  // or died and took its workers with it: they are gone a grace after that, if that is sooner.
  const double grace_s = config_.stop_grace_s;
  const double cut_off_s = std::chrono::duration<double>(
      liveness_.workers_gone_after(std::chrono::milliseconds(Ms(grace_s)))).count();
  for (int id : members_) {
    const Node& n = nodes_[id];
    if (n.ended_round == current_round()) continue;
    // One that never opened its session is counted from the round's start.
    double gone_s = std::max(n.last_seen_s, rendezvous_closed_at_s_) + cut_off_s;
    if (n.session_ended) gone_s = std::min(gone_s, n.session_ended_at_s + grace_s + kKillSlackS);
    workers_gone_by_s_ = std::max(workers_gone_by_s_, gone_s);
  }
}

void JobState::StartNextRound(double now_s, JobActions& out) {
  // A node may have gone during the back-off.
  std::vector<int> ids;
  for (int id : next_members_) {
    if (!nodes_[id].gone && SessionOpen(nodes_[id])) ids.push_back(id);
  }
  if (ids.empty() || static_cast<int>(ids.size()) < config_.min_nodes) {
    GiveUp(absl::StrCat("only ", ids.size(), " node(s) left, fewer than nodes.min (",
                        config_.min_nodes, ")"),
           now_s, out);
    return;
  }
  RoundResult r;
  r.round = current_round() + 1;
  for (size_t i = 0; i < ids.size(); ++i) {
    Node& n = nodes_[ids[i]];
    n.spare = false;
    Participant p = n.joined;
    p.worker_port = n.worker_port;
    r.nodes.push_back(p);
    r.assignments.push_back({static_cast<int>(i), r.world_size, p.slots});
    r.world_size += p.slots;
  }
  r.master_addr = r.nodes[0].addr;
  // A fixed rendezvous.master_port serves round 0 only: the failure being restarted from may
  // be that very port (taken, or held by a process that outlived its round).
  r.master_port = r.nodes[0].worker_port;

  round_ = r;
  members_ = ids;
  ranks_.clear();
  failures_.clear();
  announced_.clear();
  announce_at_s_.reset();
  dump_ranks_.clear();
  all_started_reported_ = false;
  std::vector<int> all_ranks;
  for (size_t i = 0; i < ids.size(); ++i) {
    for (int k = 0; k < r.assignments[i].local_world_size; ++k) {
      ranks_[r.assignments[i].rank_offset + k].node = ids[i];
      all_ranks.push_back(r.assignments[i].rank_offset + k);
    }
  }
  monitor_.StartRound(all_ranks, now_s);
  out.push_back(SendStartRound{r, ids});
  out.push_back(AppendEvent{RoundStartedEvent(r, ids)});
  ArmHealth(out);
}

void JobState::GiveUp(const std::string& reason, double now_s, JobActions& out) {
  gave_up_ = reason;
  const RootCauseVerdict verdict = PickRootCause(failures_);
  out.push_back(PrintLine{true, absl::StrCat("[dlaunch] not restarting: ", reason)});
  outcome_ = Outcome::kFailed;
  failure_ = failures_.empty() ? reason : DescribeFailure(verdict.root);
  failure_detail_ = failures_.empty() ? std::vector<std::string>{} : verdict.root.log_tail;
  StopAll(config_.stop_grace_s, reason, now_s, out);
}

}  // namespace dlaunch
