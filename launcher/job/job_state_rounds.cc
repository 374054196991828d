// JobState's restart rounds: a failed round is stopped with the agents kept, the round's end
// is awaited (RoundEnded from every live member), the RoundCoordinator decides, and the next
// round is started on the survivors and the spares. See docs/restarts.md.
#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "launcher/job/job_events.h"
#include "launcher/job/job_state.h"

namespace dlaunch {
namespace {

// A member that has not sent RoundEnded this long after the stop's grace, and this long after
// the last member's RoundEnded, counts as lost.
constexpr double kRoundEndSlackS = 2;

}  // namespace

JobActions JobState::OnSpareJoined(const Participant& p, int node_id, double now_s) {
  JobActions out;
  nodes_.AddSpare(node_id, p, now_s);
  RecordEvent(SpareJoinedEvent(current_round(), node_id, p), out);
  return out;
}

bool JobState::CanRestart(const Failure& f) const {
  // A hang at exit comes after ranks finished their work: a new round would redo it. A launch
  // error or a signal to the launcher is not the job's failure to retry.
  return config_.restarts.max_restarts > 0 && round_ && signals_seen_ == 0 &&
         f.cls != FailureClass::kLaunchError && f.cls != FailureClass::kExitHang;
}

void JobState::BeginRoundStop(double now_s, JobActions& out) {
  // Agents record hung ranks' stacks before they stop them, within config_.stack_dump_s.
  const double dump_s = dump_ranks_.empty() ? 0 : config_.stack_dump_s;
  rounds_.BeginStop(now_s, config_.stop_grace_s + kRoundEndSlackS + dump_s);
  SendStop stop{{}, MillisOf(config_.stop_grace_s), "restarting", dump_ranks_, current_round(), false,
                MillisOf(dump_s)};
  for (int id : nodes_.members()) {
    if (nodes_.at(id).open()) stop.nodes.push_back(id);
  }
  if (!stop.nodes.empty()) out.push_back(std::move(stop));
  RecordEvent(RoundStoppingEvent(current_round(), now_s), out);
  ArmHealth(out);
}

bool JobState::DropStale(int node, const v1::AgentMessage& msg, JobActions& out) {
  NodeRecord& n = nodes_.at(node);
  if (n.gone()) {
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
  NodeRecord& n = nodes_.at(node);
  if (ended.round() != current_round()) return;
  n.ended_round = ended.round();
  if (ended.worker_port() > 0) n.worker_port = ended.worker_port();
  n.workers_running = 0;
  rounds_.NoteMemberEnded(now_s, kRoundEndSlackS);
  AdvanceRestart(now_s, out);
}

void JobState::Dismiss(int node, const std::string& event, const std::string& why,
                       JobActions& out) {
  if (!nodes_.MarkGone(node)) return;
  NodeRecord& n = nodes_.at(node);
  RecordEvent(NodeDismissedEvent(current_round(), event, node, n.host, why), out);
  if (n.open() && !n.told_to_exit) {
    n.told_to_exit = true;
    out.push_back(SendStop{{node}, MillisOf(config_.stop_grace_s), why, {}, current_round(), true});
  }
}

void JobState::SpareLost(int node, const std::string& why, JobActions& out) {
  Dismiss(node, "spare_lost", why, out);
}

void JobState::AdvanceRestart(double now_s, JobActions& out) {
  if (outcome_ != Outcome::kRunning) return;
  if (rounds_.TakeStopOver(nodes_, current_round(), now_s)) {
    DecideRestart(now_s, out);
    return;
  }
  if (auto due = rounds_.TakeDue(nodes_, now_s)) {
    if (due->ids.empty()) {
      GiveUp(due->give_up, now_s, out);
    } else {
      StartNextRound(std::move(due->ids), now_s, due->workers_start_at_s, out);
    }
  }
}

void JobState::DecideRestart(double now_s, JobActions& out) {
  ResolveStall(now_s, out);
  const Failure root = ledger_.Verdict().root;
  ledger_.Announce(now_s, true, current_round(), out);
  // Members that did not end their round in time, or whose session broke, leave the job; the
  // next round waits for their workers to be surely stopped.
  rounds_.NoteWorkersMayRun(nodes_, current_round(), rendezvous_closed_at_s_,
                            SecondsOf(liveness_.workers_gone_after()), config_.stop_grace_s);
  for (const auto& [id, why] : RoundCoordinator::MembersThatDidNotEnd(nodes_, current_round())) {
    Dismiss(id, "node_dropped", why, out);
  }
  const RestartPlan plan = rounds_.Decide(nodes_, root, current_round(), now_s);
  for (int id : plan.exclusion_kept) {
    RecordEvent(
        ExclusionSkippedEvent(current_round(), id, "fewer than nodes.min nodes would remain"), out);
  }
  for (int id : plan.excluded) {
    Dismiss(id, "node_excluded",
            absl::StrCat("it failed ", config_.restarts.node_failure_limit, " times"), out);
  }
  const RestartDecision& d = plan.decision;
  RecordEvent(RestartDecisionEvent(current_round(),
                                   d.restart ? "restart" : d.crash_loop ? "crash loop" : "give up",
                                   d.reason, d.restarts_used, root),
              out);
  for (int id : plan.promoted) {
    RecordEvent(SparePromotedEvent(current_round() + 1, id, nodes_.at(id).host), out);
  }
  if (!plan.give_up.empty()) {
    GiveUp(plan.give_up, now_s, out);
    return;
  }
  const double at = rounds_.Schedule(plan.next, d.restart_at_s);
  RestartPlanned next;
  next.restarts_used = d.restarts_used;
  next.max_restarts = config_.restarts.max_restarts;
  next.backoff_s = std::max(0.0, d.restart_at_s - now_s);
  next.node_ids = plan.next;
  next.reason = d.reason;
  next.starts_in_s = std::max(0.0, at - now_s);
  next.waits_for_lost_workers = rounds_.workers_gone_by_s() > d.restart_at_s;
  RecordEvent(RestartEvent(current_round() + 1, next), out);
  AdvanceRestart(now_s, out);
  ArmHealth(out);
}

void JobState::BeginRound(const RoundResult& round, const std::vector<int>& ids, double now_s) {
  round_ = round;
  steps_ = StepClock();  // a resumed round may restart below the last round's step
  all_started_reported_ = false;
  monitor_.StartRound(ranks_.BeginRound(round, ids), now_s);
}

void JobState::StartNextRound(std::vector<int> ids, double now_s, double workers_start_at_s,
                              JobActions& out) {
  const RoundResult r = RoundCoordinator::BuildRound(nodes_, ids, current_round() + 1);
  nodes_.SetMembers(ids);
  ledger_.Clear();
  dump_ranks_.clear();
  inquiry_.Clear();
  // The last round's reports still held (a lost node's ranks never ended) close its lines.
  JournalHeldMetrics(out);
  // The start limits count from when the workers may start.
  BeginRound(r, ids, std::max(now_s, workers_start_at_s));
  SayMetricsCadence(r.world_size, out);
  out.push_back(SendStartRound{r, ids, workers_start_at_s});
  RecordEvent(RoundStartedEvent(r, ids), out);
  ArmHealth(out);
}

void JobState::GiveUp(const std::string& reason, double now_s, JobActions& out) {
  rounds_.NoteGaveUp(reason);
  out.push_back(PrintLine{true, absl::StrCat("[dlaunch] not restarting: ", reason)});
  outcome_ = Outcome::kFailed;
  if (ledger_.empty()) {
    ledger_.SetJobFailure(reason, {});
  } else {
    const Failure root = ledger_.Verdict().root;
    ledger_.SetJobFailure(DescribeFailure(root), root.log_tail);
  }
  StopAll(config_.stop_grace_s, reason, now_s, out);
}

std::optional<JobActions> JobState::OnRelayLost(const std::string& relay,
                                                const std::vector<int>& nodes, double now_s) {
  if (outcome_ != Outcome::kRunning) return std::nullopt;
  moves_.Lost(relay, nodes, now_s);
  JobActions out;
  RecordEvent(RelayLostEvent(current_round(), relay, nodes), out);
  return out;
}

JobActions JobState::OnSessionResumed(int node, double now_s) {
  JobActions out;
  const RelayMoves::Resumed r = moves_.Resume(node, now_s);
  RecordEvent(SessionResumedEvent(current_round(), nodes_.PlaceOf(node), r.after_s, r.relay,
                                  r.relay_back),
              out);
  return out;
}

}  // namespace dlaunch
