#include "launcher/run/job_state.h"

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/exit_codes.h"
#include "common/process.h"
#include "launcher/run/job_events.h"
#include "launcher/run/root_cause.h"

namespace dlaunch {
namespace {

bool Finished(v1::WorkerEvent::State s) {
  return s == v1::WorkerEvent::SUCCEEDED || s == v1::WorkerEvent::FAILED ||
         s == v1::WorkerEvent::STOPPED;
}

int Ms(double seconds) { return static_cast<int>(seconds * 1000); }
double Seconds(std::chrono::milliseconds d) { return std::chrono::duration<double>(d).count(); }

// Beyond the grace, a stop waits for the agents' own watchdogs (heartbeat x misses) and 5 s of
// slack before the launcher kills what is left.
constexpr double kStopSlackS = 5;
// An agent that joined is lost if its session has not opened this long after the silence limit.
constexpr double kSessionOpenSlackS = 5;
// When the first failure reads like a reaction to a peer's death ("connection reset by peer"),
// the job is stopped at once but the root cause is printed only after this long, or as soon as
// a failure of its own arrives: the rank that really died may be reported a moment later.
constexpr double kPeerSettleS = 0.5;

bool PeerLike(const Failure& f) {
  return f.cls == FailureClass::kWorkerCrash && (f.signal == 0 || f.signal == 15) &&
         LooksLikePeerFailure(f.log_tail);
}

}  // namespace

JobState::JobState(JobConfig config)
    : config_(std::move(config)),
      liveness_(std::chrono::milliseconds(Ms(config_.heartbeat_s)), config_.heartbeat_misses),
      monitor_(config_.progress),
      policy_(config_.restarts) {}

double JobState::tick_interval_s() const { return Seconds(liveness_.ping_interval()); }

void JobState::Say(const std::string& line, JobActions& out) const {
  out.push_back(PrintLine{false, "[dlaunch] " + line});
}

JobActions JobState::OnStarted(std::vector<std::string> launcher_programs, double now_s) {
  JobActions out;
  launcher_programs_ = std::move(launcher_programs);
  launchers_running_ = static_cast<int>(launcher_programs_.size());
  last_summary_s_ = now_s;
  out.push_back(AppendEvent{JournalOpenedEvent(config_.job_id)});
  out.push_back(AppendEvent{JobStartedEvent(config_.job_id, config_.hosts, config_.node_launcher)});
  Say(absl::StrCat("job ", config_.job_id, ": ", config_.hosts.size(), " node(s) via ",
                   config_.node_launcher, ", job dir ", config_.job_dir),
      out);
  return out;
}

JobActions JobState::OnNodeJoined(const Participant& p, int joined, int expected, double) {
  JobActions out;
  Say(absl::StrCat("node joined: ", p.host, " (", p.addr, "), ", p.slots, " slot(s) [", joined,
                   "/", expected, "]"),
      out);
  out.push_back(AppendEvent{NodeJoinedEvent(p, joined)});
  return out;
}

JobActions JobState::OnRendezvousClosed(const RoundResult& result, double now_s) {
  JobActions out;
  round_ = result;
  rendezvous_closed_at_s_ = now_s;
  std::vector<std::string> order;
  std::vector<int> all_ranks;
  for (size_t i = 0; i < result.nodes.size(); ++i) {
    Node& n = nodes_[static_cast<int>(i)];
    n.host = result.nodes[i].host;
    n.addr = result.nodes[i].addr;
    n.joined = result.nodes[i];
    n.worker_port = result.nodes[i].worker_port;
    members_.push_back(static_cast<int>(i));
    order.push_back(n.host);
    for (int r = 0; r < result.assignments[i].local_world_size; ++r) {
      ranks_[result.assignments[i].rank_offset + r].node = static_cast<int>(i);
      all_ranks.push_back(result.assignments[i].rank_offset + r);
    }
  }
  monitor_.StartRound(all_ranks, now_s);
  ArmHealth(out);
  Say(absl::StrCat("rendezvous complete in ", absl::StrFormat("%.2f", now_s), " s: ",
                   result.nodes.size(), " node(s), world size ", result.world_size,
                   ", MASTER_ADDR=", result.master_addr, " MASTER_PORT=", result.master_port),
      out);
  out.push_back(AppendEvent{RendezvousClosedEvent(result, members_)});
  // A stop decided while the round was open reached only the launchers; the agents that
  // just got their places must hear it too.
  if (outcome_ != Outcome::kRunning) StopAll(config_.stop_grace_s, failure_, now_s, out);
  return out;
}

JobActions JobState::OnRendezvousFailed(const absl::Status& status, double now_s) {
  JobActions out;
  FailWith(Outcome::kLaunchError, std::string(status.message()), {}, now_s, out);
  return out;
}

JobActions JobState::OnSessionOpened(int node, int session, double now_s) {
  JobActions out;
  Node& n = nodes_[node];
  n.session = session;
  n.session_ended = false;
  n.last_seen_s = now_s;
  if (outcome_ != Outcome::kRunning || n.gone) {
    n.told_to_exit = true;
    out.push_back(SendStop{{node}, Ms(config_.stop_grace_s), n.gone ? "no longer in the job" : failure_,
                           {}, current_round(), true});
  } else if (round_stop_ && NodeRankOf(node) >= 0) {
    // A member late to open its session while its round stops: it is to stop too.
    out.push_back(SendStop{{node}, Ms(config_.stop_grace_s), "restarting", {}, current_round(), false});
  }
  return out;
}

JobActions JobState::OnAgentMessage(int node, const v1::AgentMessage& msg, double now_s) {
  JobActions out;
  Node& n = nodes_[node];
  n.last_seen_s = now_s;
  if (DropStale(node, msg, out)) return out;
  switch (msg.body_case()) {
    case v1::AgentMessage::kRoundEnded:
      HandleRoundEnded(node, msg.round_ended(), now_s, out);
      break;
    case v1::AgentMessage::kHeartbeat:
      n.workers_running = msg.heartbeat().workers_running();
      for (const auto& r : msg.heartbeat().reports()) HandleReport(node, r, now_s, out);
      for (const auto& [rank, lines] : msg.heartbeat().output_lines()) {
        RankProgress& rs = ranks_[rank];
        if (lines > rs.output_lines) monitor_.OnProgress(rank, -1, now_s);
        rs.output_lines = std::max<int64_t>(rs.output_lines, lines);
      }
      ArmHealth(out);
      break;
    case v1::AgentMessage::kWorker:
      HandleWorkerEvent(node, msg.worker(), now_s, out);
      break;
    case v1::AgentMessage::kLog:
      for (const auto& line : msg.log().lines()) {
        out.push_back(PrintLine{msg.log().stderr(), absl::StrCat("[rank ", msg.log().rank(), "] ", line)});
      }
      break;
    default:
      break;
  }
  return out;
}

void JobState::HandleReport(int node, const v1::WorkerReport& r, double now_s, JobActions& out) {
  monitor_.OnProgress(r.rank(), static_cast<long>(r.step()), now_s);
  RankProgress& rs = ranks_[r.rank()];
  rs.node = node;
  rs.samples += r.samples();
  rs.busy_s += r.interval_s();
  rs.step = std::max<int64_t>(rs.step, r.step());
  rs.loss = r.loss();
  rs.has_loss = true;
  checkpoint_step_ = std::max<long>(checkpoint_step_, static_cast<long>(r.checkpoint_step()));
  if (r.has_test_accuracy()) rs.test_accuracy = r.test_accuracy();
  if (r.interval_s() > 0) rs.recent_rate = r.samples() / r.interval_s();
  out.push_back(AppendMetric{node, r, current_round()});
}

void JobState::HandleWorkerEvent(int node, const v1::WorkerEvent& ev, double now_s,
                                 JobActions& out) {
  RankProgress& rs = ranks_[ev.rank()];
  rs.node = node;
  rs.state = ev.state();
  if (ev.pid() != 0) rs.pid = ev.pid();
  if (auto e = WorkerLifecycleEvent(current_round(), PlaceOf(node), ev)) {
    out.push_back(AppendEvent{*std::move(e)});
  }
  if (Finished(ev.state())) {
    monitor_.OnExit(ev.rank(), ev.state() == v1::WorkerEvent::SUCCEEDED, now_s);
  }
  if (ev.state() == v1::WorkerEvent::STARTED && round_ && !all_started_reported_) {
    int started = 0;
    for (const auto& [rank, r] : ranks_) started += r.state != v1::WorkerEvent::STATE_UNSPECIFIED;
    if (started == round_->world_size) {
      all_started_reported_ = true;
      round_running_since_s_ = now_s;
      double took = 0;
      if (round_->round == 0) {
        Say(absl::StrCat("all ", started, " workers started in ", absl::StrFormat("%.2f", now_s), " s"), out);
      } else {
        took = now_s - restart_detected_at_s_.value_or(now_s);
        Say(absl::StrFormat("round %d running: %d nodes, %d workers; restart took %.2f s",
                            round_->round, static_cast<int>(members_.size()), started, took),
            out);
      }
      out.push_back(AppendEvent{WorkersStartedEvent(round_->round, started, now_s, took)});
    }
  } else if (ev.state() == v1::WorkerEvent::FAILED) {
    out.push_back(AppendEvent{WorkerFailedEvent(current_round(), PlaceOf(node), ev)});
    Failure f = RankFailure(FailureClass::kWorkerCrash, ev.rank(), now_s);
    f.exit_code = ev.signal() != 0 ? -1 : ev.exit_code();
    f.signal = ev.signal();
    f.log_tail.assign(ev.last_lines().begin(), ev.last_lines().end());
    // An agent reports FAILED only for a rank that ended before it heard of a stop (one that
    // ends after is STOPPED), so such a failure is never a mere consequence of the stop, even
    // when its event reaches the launcher after another node's.
    f.after_stop = false;
    Fail(Outcome::kFailed, std::move(f), now_s, out);
  } else if (ev.state() == v1::WorkerEvent::STOPPED && KilledByOthers(ev, now_s)) {
    // Its agent heard the stop before it reaped the rank, but nothing here had sent SIGKILL
    // yet: the rank was killed from outside (OOM killer, a user, the scheduler), most likely
    // before the failure that stopped the job.
    Failure f = RankFailure(FailureClass::kWorkerCrash, ev.rank(), now_s);
    f.signal = ev.signal();
    f.after_stop = false;
    f.detail = "killed while the job was stopping, before any kill was sent";
    Fail(Outcome::kFailed, std::move(f), now_s, out);
  }
  ArmHealth(out);
  MaybeFinish(now_s, out);
}

bool JobState::KilledByOthers(const v1::WorkerEvent& ev, double now_s) const {
  // Agents send SIGKILL only once the grace has passed, or at once after a second signal.
  return ev.signal() == SIGKILL && (outcome_ == Outcome::kFailed || round_stop_) &&
         signals_seen_ == 0 &&
         stop_started_at_s_ && config_.stop_grace_s > 0 &&
         now_s < *stop_started_at_s_ + config_.stop_grace_s;
}

JobActions JobState::OnSessionEnded(int node, int session, double now_s) {
  JobActions out;
  Node& n = nodes_[node];
  if (n.session != session || n.session_ended) return out;  // a replaced session
  n.session_ended = true;
  n.session_ended_at_s = now_s;
  if (n.gone) {
    MaybeFinish(now_s, out);
    return out;
  }
  if (n.spare) {
    SpareLost(node, "its session ended", out);
    MaybeFinish(now_s, out);
    return out;
  }
  bool unfinished = false;
  for (const auto& [rank, r] : ranks_) {
    if (r.node == node && !Finished(r.state)) unfinished = true;
  }
  if (unfinished) {
    NodeLost(node, FailureClass::kAgentLost,
             "its agent's session ended with workers unaccounted for", now_s, out);
  } else if (outcome_ == Outcome::kRunning && config_.restarts.max_restarts > 0 &&
             NodeRankOf(node) >= 0 && !Restarting()) {
    // With restarts an agent waits for the job's end; one that leaves early is lost.
    NodeLost(node, FailureClass::kAgentLost, "its agent's session ended before the job did",
             now_s, out);
  }
  AdvanceRestart(now_s, out);
  MaybeFinish(now_s, out);
  return out;
}

JobActions JobState::OnLauncherExited(int index, int wait_status,
                                      const std::vector<std::string>& tail, double now_s) {
  JobActions out;
  --launchers_running_;
  bool ok = WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0;
  if (!ok && outcome_ == Outcome::kRunning) {
    std::string program = index >= 0 && index < static_cast<int>(launcher_programs_.size())
                              ? launcher_programs_[index]
                              : "?";
    std::string what = absl::StrCat("node launcher `", program, "` (", config_.node_launcher,
                                    " #", index, ") ended with ", DescribeWaitStatus(wait_status));
    if (!round_) {
      FailWith(Outcome::kLaunchError, what + " before all nodes joined", tail, now_s, out);
    } else if (WIFSIGNALED(wait_status)) {
      // Not a failure by itself: the nodes it started are judged by their sessions, which end
      // at once when its agents die and then name the node and host that was lost (the root
      // cause); agents that outlive it (an ssh client killed) keep the job going.
      Say(what + "; its nodes are judged by their sessions", out);
    }
  }
  MaybeFinish(now_s, out);
  return out;
}

JobActions JobState::OnTick(double now_s) {
  JobActions out;
  if (finished_) return out;
  if (round_) {
    const double lost_after = Seconds(liveness_.lost_after());
    SendPing ping;
    for (auto& [i, n] : nodes_) {
      if (n.gone) continue;
      if (n.spare) {
        if (SessionOpen(n)) ping.nodes.push_back(i);
        if (now_s - n.last_seen_s > lost_after + (n.session < 0 ? kSessionOpenSlackS : 0)) {
          SpareLost(i, absl::StrFormat("no heartbeat for %.1f s", now_s - n.last_seen_s), out);
        }
        continue;
      }
      if (SessionOpen(n)) {
        ping.nodes.push_back(i);
        if (outcome_ == Outcome::kRunning && now_s - n.last_seen_s > lost_after) {
          NodeLost(i, FailureClass::kNodeSilent,
                   absl::StrFormat("no heartbeat for %.1f s", now_s - n.last_seen_s), now_s, out);
        }
      } else if (n.session < 0 && outcome_ == Outcome::kRunning &&
                 now_s - rendezvous_closed_at_s_ > lost_after + kSessionOpenSlackS) {
        NodeLost(i, FailureClass::kAgentLost, "its agent joined but never opened its session",
                 now_s, out);
      }
    }
    if (!ping.nodes.empty()) out.insert(out.begin(), std::move(ping));
    AdvanceRestart(now_s, out);
    CheckHealth(now_s, out);
    Announce(now_s, false, out);
  }
  if (outcome_ == Outcome::kRunning && now_s - last_summary_s_ >= config_.summary_interval_s) {
    int up = 0, running = 0;
    for (const auto& [i, n] : nodes_) {
      if (SessionOpen(n) && !n.spare && !n.gone) {
        ++up;
        running += n.workers_running;
      }
    }
    Say(SummaryLine(now_s, up, static_cast<int>(config_.hosts.size()), running,
                    round_ ? round_->world_size : 0, ranks_),
        out);
    last_summary_s_ = now_s;
  }
  return out;
}

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

JobActions JobState::OnCallRefused(const std::string& peer, const std::string& method) {
  JobActions out;
  out.push_back(PrintLine{true, absl::StrCat("[dlaunch] refused ", method, " from ", peer,
                                             ": missing or wrong job token")});
  out.push_back(AppendEvent{CallRefusedEvent(current_round(), peer, method)});
  return out;
}

void JobState::NodeLost(int node, FailureClass cls, const std::string& why, double now_s,
                        JobActions& out) {
  const Node& n = nodes_[node];
  out.push_back(AppendEvent{NodeLostEvent(current_round(), PlaceOf(node), why)});
  Failure f;
  f.cls = cls;
  f.node_id = node;
  f.node_rank = NodeRankOf(node);
  f.host = n.host;
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
  auto it = ranks_.find(rank);
  f.node_id = it == ranks_.end() ? -1 : it->second.node;
  f.node_rank = NodeRankOf(f.node_id);
  if (auto n = nodes_.find(f.node_id); n != nodes_.end()) f.host = n->second.host;
  if (round_ && f.node_rank >= 0 && f.node_rank < static_cast<int>(round_->assignments.size())) {
    f.local_rank = rank - round_->assignments[f.node_rank].rank_offset;
  }
  f.detected_at_s = now_s;
  f.after_stop = stop_started_at_s_.has_value();
  return f;
}

void JobState::Fail(Outcome outcome, Failure failure, double now_s, JobActions& out) {
  out.push_back(AppendEvent{FailureDetectedEvent(current_round(), failure)});
  failures_.push_back(std::move(failure));
  const Failure& f = failures_.back();
  if (outcome_ == Outcome::kRunning && !Restarting()) {
    if (PeerLike(f)) announce_at_s_ = now_s + kPeerSettleS;
    if (CanRestart(f)) {
      BeginRoundStop(now_s, out);
    } else {
      outcome_ = outcome;
      failure_ = DescribeFailure(f);
      failure_detail_ = f.log_tail;
      StopAll(config_.stop_grace_s, failure_, now_s, out);
    }
  }
  Announce(now_s, !PeerLike(PickRootCause(failures_).root), out);
  ArmHealth(out);
}

void JobState::FailWith(Outcome outcome, const std::string& reason,
                        std::vector<std::string> detail, double now_s, JobActions& out) {
  if (outcome_ != Outcome::kRunning) return;  // the first failure is the one reported
  outcome_ = outcome;
  failure_ = reason;
  failure_detail_ = std::move(detail);
  out.push_back(PrintLine{true, absl::StrCat("[dlaunch] ", outcome == Outcome::kInterrupted ? "" : "error: ",
                                             reason, "; stopping all workers")});
  StopAll(config_.stop_grace_s, reason, now_s, out);
}

void JobState::Announce(double now_s, bool force, JobActions& out) {
  if (failures_.empty()) return;
  if (!force && announce_at_s_ && now_s < *announce_at_s_) return;
  announce_at_s_.reset();
  const RootCauseVerdict verdict = PickRootCause(failures_);
  const std::string text = DescribeFailure(verdict.root);
  if (text == announced_) return;
  std::string line = announced_.empty()
                         ? absl::StrCat("[dlaunch] error: ", text, "; stopping all workers")
                         : absl::StrCat("[dlaunch] root cause: ", text,
                                        " (the failure reported above is a consequence)");
  out.push_back(PrintLine{true, std::move(line)});
  announced_ = text;
  out.push_back(AppendEvent{
      RootCauseEvent(current_round(), verdict.root, static_cast<int>(verdict.consequences.size()))});
}

void JobState::CheckHealth(double now_s, JobActions& out) {
  if (outcome_ != Outcome::kRunning || !round_ || Restarting()) return;
  std::vector<Hang> hangs = monitor_.Check(now_s);
  if (hangs.empty()) return;
  // A node whose heartbeats stopped cannot report its ranks' progress, and its silence stalls
  // every peer in the next collective: while any node has missed two heartbeats, a stall waits
  // for the heartbeat check to lose the node (or for the node to speak again), so a frozen node
  // is named as such even when health.stall_timeout is no longer than the heartbeat limit.
  if (hangs.front().kind != HangKind::kExitHang) {
    for (const auto& [i, n] : nodes_) {
      if (!n.gone && !n.spare && SessionOpen(n) &&
          now_s - n.last_seen_s > Seconds(liveness_.silent_after()))
        return;
    }
  }
  // The first is the rank that fell behind first; the others are named in the event.
  const Hang& h = hangs.front();
  Failure f = RankFailure(h.kind == HangKind::kExitHang ? FailureClass::kExitHang
                                                        : FailureClass::kStall,
                          h.rank, now_s);
  switch (h.kind) {
    case HangKind::kExitHang:
      f.detail = absl::StrFormat("still running %.1f s after another rank exited 0 "
                                 "(stop.exit_timeout %.1f s)", h.silent_s, h.limit_s);
      break;
    case HangKind::kStall:
      f.detail = absl::StrFormat("no progress for %.1f s (limit %.1f s), last step %d",
                                 h.silent_s, h.limit_s, h.last_step);
      break;
    case HangKind::kStartup:
      f.detail = absl::StrFormat("no progress in the %.1f s since it started "
                                 "(health.startup_timeout)", h.silent_s);
      break;
  }
  if (hangs.size() > 1) {
    absl::StrAppend(&f.detail, absl::StrFormat("; %d more rank(s) hung", hangs.size() - 1));
  }
  std::vector<int> hung;
  for (const Hang& other : hangs) {
    hung.push_back(other.rank);
    dump_ranks_.push_back(other.rank);
  }
  out.push_back(AppendEvent{HangDetectedEvent(current_round(), f, h, now_s, hung)});
  Fail(Outcome::kFailed, std::move(f), now_s, out);
}

JobActions JobState::OnHealthCheck(double now_s) {
  JobActions out;
  if (finished_) return out;
  health_armed_at_s_ = -1;
  AdvanceRestart(now_s, out);
  CheckHealth(now_s, out);
  Announce(now_s, false, out);
  ArmHealth(out);
  return out;
}

void JobState::ArmHealth(JobActions& out) {
  if (finished_) return;
  double next = outcome_ == Outcome::kRunning && !Restarting() ? monitor_.NextDeadline() : HUGE_VAL;
  if (announce_at_s_) next = std::min(next, *announce_at_s_);
  if (round_stop_) next = std::min(next, round_stop_->deadline_s);
  if (restart_at_s_) next = std::min(next, *restart_at_s_);
  if (!std::isfinite(next) || next > 1e12 || next == health_armed_at_s_) return;
  health_armed_at_s_ = next;
  out.push_back(ArmHealthCheck{next});
}

void JobState::StopAll(double grace_s, const std::string& reason, double now_s, JobActions& out) {
  // The job's end: a restart in progress is off, and every agent still in session exits,
  // spares and dismissed nodes too.
  round_stop_.reset();
  restart_at_s_.reset();
  SendStop stop{{}, Ms(grace_s), reason, dump_ranks_, current_round(), true,
                dump_ranks_.empty() ? 0 : Ms(config_.stack_dump_s)};
  for (auto& [i, n] : nodes_) {
    if (SessionOpen(n)) {
      stop.nodes.push_back(i);
      n.told_to_exit = true;
    }
  }
  if (!stop.nodes.empty()) out.push_back(std::move(stop));
  // Agents still in the rendezvous have no workers yet: stopping their launchers is enough.
  if (!round_) out.push_back(StopLaunchers{Ms(grace_s)});
  if (!stop_started_at_s_) {
    out.push_back(
        AppendEvent{StopRequestedEvent(current_round(), reason)});
    stop_started_at_s_ = now_s;
  }
  double deadline = now_s + grace_s + Seconds(liveness_.lost_after()) + kStopSlackS +
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
    int succeeded = 0;
    for (const auto& [rank, r] : ranks_) succeeded += r.state == v1::WorkerEvent::SUCCEEDED;
    if (succeeded == round_->world_size) {
      outcome_ = Outcome::kSucceeded;
      // Agents that may see another round (restarts, spares) wait until told the job is over.
      bool waiting = config_.restarts.max_restarts > 0;
      for (const auto& [i, n] : nodes_) waiting |= SessionOpen(n) && (n.spare || n.gone);
      if (waiting) StopAll(config_.stop_grace_s, "job finished", now_s, out);
    }
  }
  if (outcome_ == Outcome::kRunning) return;
  for (const auto& [i, n] : nodes_) {
    if (SessionOpen(n)) return;
  }
  if (launchers_running_ > 0) {
    // Success: the agents are exiting on their own. Bound the wait as for a stop.
    if (!stop_started_at_s_) StopAll(config_.stop_grace_s, "job finished", now_s, out);
    return;
  }
  Finish(now_s, out);
}

void JobState::Finish(double now_s, JobActions& out) {
  if (finished_) return;
  Announce(now_s, true, out);
  finished_ = true;
  JobSummary s;
  s.job_id = config_.job_id;
  switch (outcome_) {
    case Outcome::kSucceeded: s.result = "succeeded"; s.exit_code = kExitOk; break;
    case Outcome::kLaunchError: s.result = "launch error"; s.exit_code = kExitLaunchError; break;
    case Outcome::kInterrupted: s.result = "interrupted"; s.exit_code = kExitInterrupted; break;
    case Outcome::kFailed:
    case Outcome::kRunning: s.result = "failed"; s.exit_code = kExitJobFailed; break;
  }
  s.wall_time_s = now_s;
  s.restarts = policy_.restarts_used();
  s.max_restarts = config_.restarts.max_restarts;
  s.rounds = current_round() + 1;
  s.not_restarted = gave_up_;
  s.nodes = round_ ? static_cast<int>(round_->nodes.size()) : 0;
  s.world_size = round_ ? round_->world_size : 0;
  s.failure = failure_;
  s.failure_detail = failure_detail_;
  if (!failures_.empty() && outcome_ != Outcome::kSucceeded) {
    RootCauseVerdict verdict = PickRootCause(failures_);
    s.failure = DescribeFailure(verdict.root);
    s.failure_detail = verdict.root.log_tail;
    s.root_cause = std::move(verdict.root);
    s.consequences = std::move(verdict.consequences);
  }
  SummarizeRanks(ranks_, &s);
  std::map<int, std::string> hosts;
  for (const auto& [i, n] : nodes_) hosts[i] = n.host;
  for (auto& line : FinalReport(s, ranks_, hosts)) {
    out.push_back(PrintLine{s.exit_code != 0, std::move(line)});
  }
  out.push_back(WriteSummary{SummaryJson(s)});
  out.push_back(AppendEvent{JobFinishedEvent(current_round(), s.result, s.exit_code, now_s)});
  out.push_back(FinishJob{s.exit_code});
}

}  // namespace dlaunch
