// JobState's failures and the job's end: lost nodes, failures of ranks, stalls and hangs at
// exit, signals, the stop of every node with its deadline, and the summary.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iterator>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/exit_codes.h"
#include "launcher/job/job_events.h"
#include "launcher/job/job_state.h"

namespace dlaunch {
namespace {

// Beyond the grace, a stop waits for the agents' own watchdogs (heartbeat x misses) and 5 s of
// slack before the launcher kills what is left.
constexpr double kStopSlackS = 5;

std::string HangDetail(const Hang& h) {
  switch (h.kind) {
    case HangKind::kExitHang:
      return absl::StrFormat("still running %.1f s after another rank exited 0 "
                             "(stop.exit_timeout %.1f s)", h.silent_s, h.limit_s);
    case HangKind::kStall:
      // A script that sends no reports makes progress by its output lines: there is no step.
      if (h.last_step < 0) {
        return absl::StrFormat("no report or output line for %.1f s (limit %.1f s)", h.silent_s,
                               h.limit_s);
      }
      return absl::StrFormat("no progress for %.1f s (limit %.1f s), last step %d", h.silent_s,
                             h.limit_s, h.last_step);
    case HangKind::kStartup:
      return absl::StrFormat("no progress in the %.1f s since it started "
                             "(health.startup_timeout)", h.silent_s);
  }
  return "";
}

}  // namespace

JobActions JobState::OnSignal(int signal, double now_s) {
  JobActions out;
  if (finished_) return out;
  ++signals_seen_;
  if (signals_seen_ == 1) {
    FailWith(Outcome::kInterrupted, absl::StrCat("interrupted by signal ", signal), {}, now_s, out);
    out.push_back(PrintLine{true, absl::StrCat("[dlaunch] waiting up to ", config_.stop_grace_s,
                                               " s for workers to stop (Ctrl-C again to kill them now)")});
  } else {
    out.push_back(PrintLine{true, "[dlaunch] killing all workers now"});
    if (outcome_ == Outcome::kRunning) outcome_ = Outcome::kInterrupted;
    StopAll(0, "interrupted", now_s, out);
    out.push_back(StopLaunchers{500});
  }
  return out;
}

JobActions JobState::OnStopDeadline(double now_s) {
  JobActions out;
  // A timer for a deadline that has since moved earlier, or that fired a hair early.
  if (finished_ || !stop_deadline_s_ || now_s + 0.001 < *stop_deadline_s_) return out;
  out.push_back(PrintLine{true, "[dlaunch] nodes did not finish stopping in time; killing the node launchers"});
  out.push_back(KillLaunchers{});
  Finish(now_s, out);
  return out;
}

void JobState::NodeLost(int node, FailureClass cls, const std::string& why, double now_s,
                        JobActions& out) {
  // A silent node stays silent tick after tick until its round's stop is over; its session may
  // also end meanwhile. It failed once.
  if (std::exchange(nodes_.at(node).lost, true)) return;
  RecordEvent(NodeLostEvent(current_round(), nodes_.PlaceOf(node), why), out);
  Failure f;
  f.cls = cls;
  f.node_id = node;
  f.node_rank = nodes_.NodeRankOf(node);
  f.host = nodes_.at(node).host;
  f.detected_at_s = now_s;
  f.after_stop = stop_started_at_s_.has_value();
  f.detail = why;
  // Lost while its round stops or waits for the next: it has no place in that one.
  if (Restarting()) Dismiss(node, "node_dropped", why, out);
  Fail(Outcome::kFailed, std::move(f), now_s, out);
}

Failure JobState::RankFailure(FailureClass cls, int rank, double now_s) const {
  Failure f;
  f.cls = cls;
  f.global_rank = rank;
  const RankProgress* r = ranks_.Find(rank);
  f.node_id = r == nullptr ? -1 : r->node;
  f.node_rank = nodes_.NodeRankOf(f.node_id);
  if (const NodeRecord* n = nodes_.Find(f.node_id)) f.host = n->host;
  if (round_ && f.node_rank >= 0 && f.node_rank < static_cast<int>(round_->assignments.size())) {
    f.local_rank = rank - round_->assignments[f.node_rank].rank_offset;
  }
  f.detected_at_s = now_s;
  f.after_stop = stop_started_at_s_.has_value();
  return f;
}

void JobState::Fail(Outcome outcome, Failure failure, double now_s, JobActions& out) {
  const bool first = outcome_ == Outcome::kRunning && !Restarting();
  ledger_.Record(std::move(failure), first, now_s, current_round(), out);
  if (first) {
    const Failure& f = ledger_.last();
    if (CanRestart(f)) {
      BeginRoundStop(now_s, out);
    } else {
      outcome_ = outcome;
      ledger_.SetJobFailure(DescribeFailure(f), f.log_tail);
      StopAll(config_.stop_grace_s, ledger_.job_failure(), now_s, out);
    }
  }
  ledger_.AnnounceNew(now_s, current_round(), out);
  ArmHealth(out);
}

void JobState::FailWith(Outcome outcome, const std::string& reason,
                        std::vector<std::string> detail, double now_s, JobActions& out) {
  if (outcome_ != Outcome::kRunning) return;  // the first failure is the one reported
  outcome_ = outcome;
  ledger_.SetJobFailure(reason, std::move(detail));
  // Before the round closed no worker runs: the node launchers are stopped, and the line says
  // no more than the reason.
  out.push_back(PrintLine{true, absl::StrCat("[dlaunch] ", outcome == Outcome::kInterrupted ? "" : "error: ",
                                             reason, round_ ? "; stopping all workers" : "")});
  StopAll(config_.stop_grace_s, reason, now_s, out);
}

void JobState::CheckHealth(double now_s, JobActions& out) {
  if (outcome_ != Outcome::kRunning || !round_ || Restarting()) return;
  std::vector<Hang> hangs = monitor_.Check(now_s);
  if (hangs.empty()) return;
  // A node whose heartbeats stopped cannot report its ranks' progress, and its silence stalls
  // every peer in the next collective: while any node has missed two heartbeats, a stall waits
  // for the heartbeat check to lose the node (or for the node to speak again), so a frozen node
  // is named as such even when health.stall_timeout is no longer than the heartbeat limit.
  if (hangs.front().kind != HangKind::kExitHang &&
      nodes_.AnyMemberSilent(now_s, SecondsOf(liveness_.silent_after()))) {
    return;
  }
  // The first is the rank that fell behind first; the others are named in the event.
  const Hang& h = hangs.front();
  Failure f = RankFailure(h.kind == HangKind::kExitHang ? FailureClass::kExitHang
                                                        : FailureClass::kStall,
                          h.rank, now_s);
  f.detail = HangDetail(h);
  std::vector<int> hung;
  for (const Hang& other : hangs) hung.push_back(other.rank);
  if (hangs.size() > 1) {
    absl::StrAppend(&f.detail, "; ", RankList(std::vector<int>(hung.begin() + 1, hung.end())),
                    " over the limit too");
  }
  RecordEvent(HangDetectedEvent(current_round(), f, h, now_s, hung), out);
  if (h.kind == HangKind::kExitHang) {
    // Ranks still running after a peer finished: their own stacks say where each is held up.
    dump_ranks_ = hung;
  } else {
    BeginStallInquiry(h, now_s, out);
    // Its root cause waits for the stacks.
    ledger_.HoldFor(inquiry_.due_s());
  }
  Fail(Outcome::kFailed, std::move(f), now_s, out);
}

void JobState::BeginStallInquiry(const Hang& h, double now_s, JobActions& out) {
  // The rank silent longest is only a suspect: a rank stopped in its own code stalls every
  // peer in the next collective, and each of them falls silent too. Every rank's stacks, on
  // every node, tell the ones that stopped from the ones that wait.
  std::map<int, double> silences = monitor_.Silences(now_s);
  dump_ranks_.clear();
  std::set<int> nodes;
  for (const auto& [rank, silent] : silences) {
    dump_ranks_.push_back(rank);
    if (const RankProgress* r = ranks_.Find(rank)) nodes.insert(r->node);
  }
  // Slack for the stacks' way up after the agents' budget.
  constexpr double kStacksSlackS = 2;
  inquiry_.Begin(dump_ranks_, h.rank, silences, now_s, now_s + config_.stack_dump_s + kStacksSlackS);
  double least = HUGE_VAL;
  for (const auto& [rank, silent] : silences) {
    if (rank != h.rank) least = std::min(least, silent);
  }
  std::string others;
  if (std::isfinite(least)) {
    others = absl::StrFormat("; every other rank silent for at least %.1f s", least);
  }
  out.push_back(PrintLine{
      true, absl::StrFormat("[dlaunch] stall: rank %d: %s%s; taking the stacks of %d rank(s) on "
                            "%d node(s) (up to %.0f s) to find the rank that stopped",
                            h.rank, HangDetail(h), others, static_cast<int>(dump_ranks_.size()),
                            static_cast<int>(nodes.size()), config_.stack_dump_s)});
}

void JobState::HandleStacks(const v1::RankStacks& stacks, double now_s, JobActions& out) {
  if (std::optional<StuckAt> at = StuckAtOf(stacks)) ledger_.NoteStuckAt(stacks.rank(), *at);
  const bool inquiring = inquiry_.open();
  // At scale only some are said (StallInquiry::Note); the files and the journal have them all.
  if (!inquiring || inquiry_.Note(stacks)) out.push_back(PrintLine{true, StacksLine(stacks, inquiring)});
  if (inquiring && inquiry_.complete()) ResolveStall(now_s, out);
}

void JobState::ResolveStall(double now_s, JobActions& out) {
  if (!inquiry_.open()) return;
  inquiry_.Close();
  std::vector<int> outside = inquiry_.Outside();
  std::vector<int> waiting = inquiry_.Waiting();
  const std::optional<StallInquiry::RecorderVerdict> fr = inquiry_.Recorder();
  if (fr) {
    // The recorders' sequence numbers, not frames: the ranks behind never entered the collective
    // the others are in. Ranks whose recorder was not read keep what their stacks say.
    out.push_back(PrintLine{true, "[dlaunch] " + RecorderLine(*fr, inquiry_)});
    auto unread = [&](const std::vector<int>& ranks) {
      std::vector<int> kept;
      std::set_intersection(ranks.begin(), ranks.end(), fr->unread.begin(), fr->unread.end(),
                            std::back_inserter(kept));
      return kept;
    };
    std::vector<int> o = unread(outside), w = unread(waiting);
    o.insert(o.end(), fr->behind.begin(), fr->behind.end());
    w.insert(w.end(), fr->ahead.begin(), fr->ahead.end());
    std::sort(o.begin(), o.end());
    std::sort(w.begin(), w.end());
    outside = std::move(o);
    waiting = std::move(w);
  }
  for (int rank : waiting) ledger_.MarkWaitsOnPeers(rank);
  const bool suspect_waits =
      std::binary_search(waiting.begin(), waiting.end(), inquiry_.suspect());
  // Ranks outside a collective while the others wait in one stopped them. Where nobody waits
  // in a collective (ranks that meet some other way), the stacks cannot tell: the suspect stays.
  std::vector<int> stopped;
  if (!waiting.empty()) {
    for (int rank : outside) {
      if (rank != inquiry_.suspect()) stopped.push_back(rank);
    }
  }
  if (suspect_waits) {
    // Each is a failure of its own, seen when the stall was: the root cause among them.
    for (int rank : stopped) {
      Failure f = RankFailure(FailureClass::kStall, rank, inquiry_.detected_at_s());
      f.after_stop = false;
      f.detail = absl::StrFormat("no progress for %.1f s, outside any collective",
                                 inquiry_.SilentFor(rank));
      if (fr && std::binary_search(fr->behind.begin(), fr->behind.end(), rank)) {
        f.detail = absl::StrFormat("no progress for %.1f s, never entered collective %d%s its "
                                   "peers are in (flight recorder)",
                                   inquiry_.SilentFor(rank), fr->seq,
                                   fr->collective.empty() ? "" : " (" + fr->collective + ")");
      }
      if (const v1::RankStacks* s = inquiry_.StacksOf(rank)) f.stuck_at = StuckAtOf(*s);
      ledger_.Record(std::move(f), false, now_s, current_round(), out);
    }
  }
  if (outside.empty()) {
    const std::vector<int> unknown = inquiry_.Unknown();
    std::string why = unknown.empty()
        ? "every rank's stacks show it waiting in a collective: none stopped in its own code "
          "(a collective that never completes: the network, or a rank that left it)"
        : absl::StrCat("no rank's stacks show it outside a collective; ", RankList(unknown),
                       unknown.size() == 1 ? " has" : " have", " no stacks to tell");
    out.push_back(PrintLine{true, "[dlaunch] " + why});
  }
  ledger_.Release(now_s, current_round(), out);
  if (!suspect_waits && !stopped.empty()) {
    out.push_back(PrintLine{true, absl::StrCat("[dlaunch] ", RankList(stopped),
                                               " stopped outside a collective too")});
  }
  const std::string clause = inquiry_.WaitingClause(waiting);
  if (!clause.empty() && !outside.empty()) {
    const size_t culprits = suspect_waits ? stopped.size() : stopped.size() + 1;
    out.push_back(PrintLine{true, absl::StrCat("[dlaunch] ", clause, " for ",
                                               culprits == 1 ? "it" : "them")});
  }
  ArmHealth(out);
}

JobActions JobState::OnHealthCheck(double now_s) {
  JobActions out;
  if (finished_) return out;
  health_armed_at_s_ = -1;
  if (inquiry_.open() && now_s >= inquiry_.due_s()) ResolveStall(now_s, out);
  AdvanceRestart(now_s, out);
  CheckHealth(now_s, out);
  ledger_.Announce(now_s, false, current_round(), out);
  ArmHealth(out);
  return out;
}

void JobState::ArmHealth(JobActions& out) {
  if (finished_) return;
  double next = outcome_ == Outcome::kRunning && !Restarting() ? monitor_.NextDeadline() : HUGE_VAL;
  if (auto at = ledger_.announce_at_s()) next = std::min(next, *at);
  if (inquiry_.open()) next = std::min(next, inquiry_.due_s());
  if (auto at = rounds_.stop_deadline_s()) next = std::min(next, *at);
  if (auto at = rounds_.send_at_s()) next = std::min(next, *at);
  if (!std::isfinite(next) || next > 1e12 || next == health_armed_at_s_) return;
  health_armed_at_s_ = next;
  out.push_back(ArmHealthCheck{next});
}

void JobState::StopAll(double grace_s, const std::string& reason, double now_s, JobActions& out) {
  // The job's end: a restart in progress is off, and every agent still in session exits,
  // spares and dismissed nodes too.
  rounds_.Cancel();
  SendStop stop{{}, MillisOf(grace_s), reason, dump_ranks_, current_round(), true,
                dump_ranks_.empty() ? 0 : MillisOf(config_.stack_dump_s)};
  for (const auto& [id, n] : nodes_.all()) {
    if (!n.open()) continue;
    stop.nodes.push_back(id);
    nodes_.at(id).told_to_exit = true;
  }
  if (!stop.nodes.empty()) out.push_back(std::move(stop));
  // Agents still in the rendezvous have no workers yet: stopping their launchers is enough.
  if (!round_) out.push_back(StopLaunchers{MillisOf(grace_s)});
  if (!stop_started_at_s_) {
    RecordEvent(StopRequestedEvent(current_round(), reason), out);
    stop_started_at_s_ = now_s;
  }
  double deadline = now_s + grace_s + SecondsOf(liveness_.lost_after()) + kStopSlackS +
                    (dump_ranks_.empty() ? 0 : config_.stack_dump_s);
  if (!stop_deadline_s_ || deadline < *stop_deadline_s_) {
    stop_deadline_s_ = deadline;
    out.push_back(ArmStopDeadline{deadline});
  }
  MaybeFinish(now_s, out);
}

void JobState::MaybeFinish(double now_s, JobActions& out) {
  if (finished_) return;
  if (outcome_ == Outcome::kRunning && round_) {
    if (ranks_.succeeded() == round_->world_size) {
      outcome_ = Outcome::kSucceeded;
      // Agents that may see another round (restarts, spares) wait until told the job is over.
      bool waiting = config_.restarts.max_restarts > 0;
      for (const auto& [id, n] : nodes_.all()) waiting |= n.open() && (n.spare() || n.gone());
      if (waiting) StopAll(config_.stop_grace_s, "job finished", now_s, out);
    }
  }
  if (outcome_ == Outcome::kRunning || nodes_.AnyOpen()) return;
  if (launchers_running_ > 0) {
    // Success: the agents are exiting on their own. Bound the wait as for a stop.
    if (!stop_started_at_s_) StopAll(config_.stop_grace_s, "job finished", now_s, out);
    return;
  }
  Finish(now_s, out);
}

v1::JobSummary JobState::Summarize(double now_s) const {
  v1::JobSummary s;
  s.set_job_id(config_.job_id);
  switch (outcome_) {
    case Outcome::kSucceeded: s.set_result("succeeded"); s.set_exit_code(kExitOk); break;
    case Outcome::kLaunchError: s.set_result("launch error"); s.set_exit_code(kExitLaunchError); break;
    case Outcome::kInterrupted: s.set_result("interrupted"); s.set_exit_code(kExitInterrupted); break;
    case Outcome::kFailed:
    case Outcome::kRunning: s.set_result("failed"); s.set_exit_code(kExitJobFailed); break;
  }
  s.set_wall_time_s(now_s);
  s.set_restarts(rounds_.restarts_used());
  s.set_max_restarts(config_.restarts.max_restarts);
  s.set_rounds(current_round() + 1);
  s.set_not_restarted(rounds_.gave_up());
  s.set_nodes(round_ ? static_cast<int>(round_->nodes.size()) : 0);
  s.set_world_size(round_ ? round_->world_size : 0);
  s.set_failure(ledger_.job_failure());
  for (const std::string& line : ledger_.job_failure_detail()) s.add_failure_detail(line);
  if (!ledger_.empty() && outcome_ != Outcome::kSucceeded) {
    const RootCauseVerdict verdict = ledger_.Verdict();
    *s.mutable_root_cause() = FailureRecordOf(verdict.root);
    s.set_failure(s.root_cause().description());
    s.mutable_failure_detail()->CopyFrom(s.root_cause().log_tail());
    for (const Failure& c : verdict.consequences) *s.add_consequences() = FailureRecordOf(c);
  }
  SummarizeRanks(ranks_.all(), &s);
  s.set_samples_per_sec_per_rank(s.world_size() > 0 ? s.samples_per_sec() / s.world_size() : 0);
  return s;
}

void JobState::Finish(double now_s, JobActions& out) {
  if (finished_) return;
  ResolveStall(now_s, out);
  ledger_.Announce(now_s, true, current_round(), out);
  finished_ = true;
  SayHeldBackOutput(now_s, true, out);
  JournalHeldMetrics(out);
  if (metrics_.folded() > 0) {
    Say(absl::StrCat("metrics.jsonl: ", metrics_.lines() + metrics_.folded(), " reports in ",
                     metrics_.lines(), " lines (", metrics_.folded(),
                     " folded into the line after them)"),
        out);
  }
  if (events_after_end_ > 1) {
    Say(absl::StrCat("warning: ", events_after_end_,
                     " worker event(s) for ranks that had already ended were ignored"),
        out);
  }
  v1::JobSummary s = Summarize(now_s);
  exit_code_ = s.exit_code();
  for (auto& line : FinalReport(s, ranks_.all(), nodes_.Hosts())) {
    out.push_back(PrintLine{exit_code_ != 0, std::move(line)});
  }
  v1::JobEvent finished = JobFinishedEvent(current_round(), s.result(), exit_code_, now_s);
  out.push_back(WriteSummary{std::move(s)});
  RecordEvent(std::move(finished), out);
  out.push_back(FinishJob{exit_code_});
}

}  // namespace dlaunch
