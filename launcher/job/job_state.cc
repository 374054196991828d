#include "launcher/job/job_state.h"

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/wait_status.h"
#include "launcher/job/job_events.h"

namespace dlaunch {
namespace {

// A rank that died on its own: out of memory when its agent found the OOM killer's mark.
FailureClass CrashClass(const v1::WorkerEvent& ev) {
  return ev.out_of_memory().empty() ? FailureClass::kWorkerCrash : FailureClass::kOutOfMemory;
}


// An agent that joined is lost if its session has not opened this long after the silence limit.
constexpr double kSessionOpenSlackS = 5;

// "preflight: 4 node(s) passed; slowest check 1.21 s on h2 (command: ...)"; "" when it was off.
std::string PreflightSummary(const std::vector<Participant>& nodes) {
  const SlowestCheck slowest = FindSlowestCheck(nodes);
  if (slowest.check == nullptr) return "";
  return absl::StrFormat("preflight: %d node(s) passed; slowest check %.2f s on %s (%s: %s)",
                         nodes.size(), slowest.check->seconds(), slowest.node->host,
                         slowest.check->name(), slowest.check->detail());
}

}  // namespace

JobState::JobState(JobConfig config)
    : config_(std::move(config)),
      liveness_(Liveness(config_)),
      rounds_(config_.restarts, static_cast<int>(config_.hosts.size()), config_.min_nodes),
      monitor_(config_.progress),
      stragglers_(config_.stragglers) {}

LivenessPolicy JobState::Liveness(const JobConfig& config) {
  return LivenessPolicy(std::chrono::milliseconds(MillisOf(config.heartbeat_s)),
                        config.heartbeat_misses, static_cast<int>(config.hosts.size()));
}

double JobState::tick_interval_s() const { return SecondsOf(liveness_.ping_interval()); }

void JobState::Say(const std::string& line, JobActions& out) const {
  out.push_back(PrintLine{false, "[dlaunch] " + line});
}

v1::JobSnapshot JobState::Snapshot(double now_s) const {
  SnapshotInputs in;
  in.job_id = config_.job_id;
  in.nodes_expected = static_cast<int>(config_.hosts.size());
  in.round = round_ ? &*round_ : nullptr;
  in.nodes = &nodes_;
  in.ranks = &ranks_.all();
  in.steps = &steps_;
  in.silent_after_s = SecondsOf(liveness_.silent_after());
  in.moving = &moves_;
  if (finished_) in.exit_code = exit_code_;
  const std::map<int, double> scores = stragglers_.NodeScores();
  std::set<int> named;
  for (const auto& [node, change] : stragglers_.named()) named.insert(node);
  in.straggler_scores = &scores;
  in.stragglers = &named;
  return BuildJobSnapshot(in, now_s);
}

JobActions JobState::OnStarted(std::vector<std::string> launcher_programs, double now_s) {
  JobActions out;
  launcher_programs_ = std::move(launcher_programs);
  launchers_running_ = static_cast<int>(launcher_programs_.size());
  last_summary_s_ = now_s;
  RecordEvent(JournalOpenedEvent(config_.job_id), out);
  RecordEvent(
      JobStartedEvent(config_.job_id, config_.hosts, config_.node_launcher, config_.job_dir), out);
  if (!config_.preflight_note.empty()) Say(config_.preflight_note, out);
  return out;
}

JobActions JobState::OnNodeJoined(const Participant& p, int joined, int expected, double) {
  JobActions out;
  RecordEvent(NodeJoinedEvent(p, joined, expected), out);
  return out;
}

JobActions JobState::OnNodeUnfit(const Participant& p, double) {
  JobActions out;
  RecordEvent(NodeUnfitEvent(p), out);
  return out;
}

JobActions JobState::OnRendezvousClosed(const RoundResult& result, double now_s) {
  JobActions out;
  if (std::string line = PreflightSummary(result.nodes); !line.empty()) Say(line, out);
  rendezvous_closed_at_s_ = now_s;
  nodes_.AddRound0(result, now_s);
  BeginRound(result, nodes_.members(), now_s);
  ArmHealth(out);
  RecordEvent(RendezvousClosedEvent(result, nodes_.members(), now_s), out);
  SayMetricsCadence(result.world_size, out);
  // A stop decided while the round was open reached only the launchers; the agents that
  // just got their places must hear it too.
  if (outcome_ != Outcome::kRunning) StopAll(config_.stop_grace_s, ledger_.job_failure(), now_s, out);
  return out;
}

JobActions JobState::OnRendezvousFailed(const absl::Status& status, double now_s) {
  JobActions out;
  FailWith(Outcome::kLaunchError, std::string(status.message()), {}, now_s, out);
  return out;
}

JobActions JobState::OnSessionOpened(int node, int session, double now_s) {
  JobActions out;
  nodes_.OpenSession(node, session, now_s);
  NodeRecord& n = nodes_.at(node);
  if (outcome_ != Outcome::kRunning || n.gone()) {
    n.told_to_exit = true;
    out.push_back(SendStop{{node}, MillisOf(config_.stop_grace_s),
                           n.gone() ? "no longer in the job" : ledger_.job_failure(), {},
                           current_round(), true});
  } else if (rounds_.stopping() && nodes_.NodeRankOf(node) >= 0) {
    // A member late to open its session while its round stops: it is to stop too.
    out.push_back(SendStop{{node}, MillisOf(config_.stop_grace_s), "restarting", {}, current_round(), false});
  }
  return out;
}

JobActions JobState::OnAgentMessage(int node, const v1::AgentMessage& msg, double now_s) {
  JobActions out;
  NodeRecord& n = nodes_.at(node);
  n.last_seen_s = now_s;
  // GPU and host samples describe the node, whatever round the message belongs to.
  if (msg.has_heartbeat()) NoteHostHealth(node, msg.heartbeat(), now_s, out);
  if (DropStale(node, msg, out)) return out;
  switch (msg.body_case()) {
    case v1::AgentMessage::kRoundEnded:
      HandleRoundEnded(node, msg.round_ended(), now_s, out);
      break;
    case v1::AgentMessage::kHeartbeat:
      HandleHeartbeat(node, msg.heartbeat(), now_s, out);
      break;
    case v1::AgentMessage::kWorker:
      HandleWorkerEvent(node, msg.worker(), now_s, out);
      break;
    case v1::AgentMessage::kStacks:
      RecordEvent(StacksRecordedEvent(current_round(), nodes_.PlaceOf(node), msg.stacks()), out);
      HandleStacks(msg.stacks(), now_s, out);
      break;
    case v1::AgentMessage::kLog: {
      // The agent's own notes on a rank ("[dlaunch] ... could not be written to its log") are
      // always shown; the rank's lines within the budget.
      const auto& lines = msg.log().lines();
      const auto is_note = [](const std::string& l) { return absl::StartsWith(l, "[dlaunch]"); };
      int64_t budget = output_budget_.Take(
          lines.size() - std::count_if(lines.begin(), lines.end(), is_note), now_s);
      for (const std::string& line : lines) {
        if (!is_note(line) && budget-- <= 0) continue;
        out.push_back(PrintLine{msg.log().stderr(), absl::StrCat("[rank ", msg.log().rank(), "] ", line)});
      }
      SayHeldBackOutput(now_s, false, out);
      break;
    }
    default:
      break;
  }
  return out;
}

void JobState::NoteHostHealth(int node, const v1::Heartbeat& hb, double now_s, JobActions& out) {
  NodeRecord& n = nodes_.at(node);
  n.gpus.assign(hb.gpus().begin(), hb.gpus().end());
  if (!hb.has_host()) return;
  n.health = hb.host();
  if (n.health_logged_at_s >= 0 && now_s - n.health_logged_at_s < config_.summary_interval_s) return;
  n.health_logged_at_s = now_s;
  out.push_back(AppendHostSample{node, hb.host(), current_round(), n.gpus});
}

void JobState::HandleHeartbeat(int node, const v1::Heartbeat& hb, double now_s, JobActions& out) {
  nodes_.at(node).workers_running = hb.workers_running();
  for (const auto& r : hb.reports()) HandleReport(node, r, now_s, out);
  for (const auto& [rank, lines] : hb.output_lines()) {
    RankProgress& rs = ranks_.Of(rank, node);
    if (lines > rs.output_lines) monitor_.OnProgress(rank, -1, now_s);
    rs.output_lines = std::max<int64_t>(rs.output_lines, lines);
  }
  for (const auto& [rank, cpu] : hb.rank_cpu()) {
    stragglers_.OnCpuSample(rank, node, cpu.cpu_s(), cpu.run_delay_s(), now_s);
  }
  NoteRankGpus(node, hb, now_s);
  ArmHealth(out);
}

void JobState::HandleReport(int node, const v1::WorkerReport& r, double now_s, JobActions& out) {
  monitor_.OnProgress(r.rank(), static_cast<long>(r.step()), now_s);
  stragglers_.OnReport(r.rank(), node, r, now_s);
  RankProgress& rs = ranks_.Of(r.rank(), node);
  rs.step = std::max<int64_t>(rs.step, r.step());
  if (r.phase() != v1::WorkerReport::PHASE_UNSPECIFIED) rs.phase = r.phase();
  steps_.Note(r.step(), r.total_steps(), now_s);
  rounds_.NoteCheckpoint(static_cast<long>(r.checkpoint_step()));
  JournalMetric(metrics_.Add(r.rank(), node, current_round(), r, now_s), out);
  if (r.kind() == v1::WorkerReport::PHASE) return;  // no samples, no loss
  rs.samples += r.samples();
  rs.busy_s += r.interval_s();
  rs.loss = r.loss();
  rs.has_loss = true;
  if (r.has_test_accuracy()) rs.test_accuracy = r.test_accuracy();
  if (r.interval_s() > 0) {
    rs.recent_rate = r.samples() / r.interval_s();
  } else if (r.samples_per_sec() > 0) {
    rs.recent_rate = r.samples_per_sec();
  }
}

void JobState::HandleWorkerEvent(int node, const v1::WorkerEvent& ev, double now_s,
                                 JobActions& out) {
  RankProgress& rank = ranks_.Of(ev.rank(), node);
  if (WorkerEnded(rank.state)) {
    // A rank ends once per round. A real agent never reports it again; a broken one must not
    // make an ended rank run again (the job would wait for its end forever) or end it twice.
    if (events_after_end_++ == 0) {
      Say(absl::StrCat("warning: node ", node, " reported rank ", ev.rank(), " ",
                       v1::WorkerEvent::State_Name(ev.state()),
                       " after it ended; ignored (later such events are counted, not shown)"),
          out);
    }
    return;
  }
  ranks_.SetState(rank, ev.state());
  if (ev.pid() != 0) rank.pid = ev.pid();
  if (auto e = WorkerLifecycleEvent(current_round(), nodes_.PlaceOf(node), ev)) {
    RecordEvent(*std::move(e), out);
  }
  if (WorkerEnded(ev.state())) {
    monitor_.OnExit(ev.rank(), ev.state() == v1::WorkerEvent::SUCCEEDED, now_s);
    stragglers_.OnRankEnded(ev.rank());
    JournalMetric(metrics_.Flush(ev.rank()), out);  // its last reports, held back at scale
  }
  if (ev.state() == v1::WorkerEvent::STARTED) {
    NoteAllStarted(now_s, out);
  } else if (ev.state() == v1::WorkerEvent::FAILED) {
    RecordEvent(WorkerFailedEvent(current_round(), nodes_.PlaceOf(node), ev), out);
    Failure f = RankFailure(CrashClass(ev), ev.rank(), now_s);
    f.exit_code = ev.signal() != 0 ? -1 : ev.exit_code();
    f.signal = ev.signal();
    f.detail = ev.out_of_memory().empty() ? ev.error() : ev.out_of_memory();
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
    Failure f = RankFailure(CrashClass(ev), ev.rank(), now_s);
    f.signal = ev.signal();
    f.after_stop = false;
    f.detail = ev.out_of_memory().empty()
                   ? "killed while the job was stopping, before any kill was sent"
                   : ev.out_of_memory();
    Fail(Outcome::kFailed, std::move(f), now_s, out);
  }
  ArmHealth(out);
  MaybeFinish(now_s, out);
}

void JobState::JournalMetric(std::optional<MetricsCadence::Line> line, JobActions& out) {
  if (line) out.push_back(AppendMetric{line->node, std::move(line->report), line->round});
}

void JobState::JournalHeldMetrics(JobActions& out) {
  for (MetricsCadence::Line& line : metrics_.FlushAll()) JournalMetric(std::move(line), out);
}

void JobState::SayMetricsCadence(int world_size, JobActions& out) {
  const double interval = MetricsCadence::IntervalFor(world_size, config_.heartbeat_s);
  if (!metrics_.SetInterval(interval)) return;
  if (interval <= 0) {
    Say("metrics.jsonl: every report of every rank again", out);
    return;
  }
  Say(absl::StrFormat("metrics.jsonl: %d ranks report %.0f times a second; each rank's reports "
                      "are folded into one line every %.1f s (docs/journal.md)",
                      world_size, world_size / config_.heartbeat_s, interval),
      out);
}

void JobState::NoteAllStarted(double now_s, JobActions& out) {
  if (!round_ || all_started_reported_) return;
  const int started = ranks_.started();
  if (started != round_->world_size) return;
  all_started_reported_ = true;
  rounds_.NoteRoundRunning(now_s);
  const double took = round_->round == 0 ? 0 : now_s - rounds_.detected_at_s().value_or(now_s);
  RecordEvent(WorkersStartedEvent(round_->round, static_cast<int>(nodes_.members().size()),
                                  started, now_s, took),
              out);
}

bool JobState::KilledByOthers(const v1::WorkerEvent& ev, double now_s) const {
  // Agents send SIGKILL only once the grace has passed, or at once after a second signal.
  return ev.signal() == SIGKILL && (outcome_ == Outcome::kFailed || rounds_.stopping()) &&
         signals_seen_ == 0 &&
         stop_started_at_s_ && config_.stop_grace_s > 0 &&
         now_s < *stop_started_at_s_ + config_.stop_grace_s;
}

JobActions JobState::OnSessionEnded(int node, int session, double now_s) {
  JobActions out;
  if (!nodes_.EndSession(node, session, now_s)) return out;  // a replaced session
  const NodeRecord& n = nodes_.at(node);
  if (n.gone()) {
    MaybeFinish(now_s, out);
    return out;
  }
  if (n.spare()) {
    SpareLost(node, "its session ended", out);
    MaybeFinish(now_s, out);
    return out;
  }
  if (ranks_.Unfinished(node)) {
    NodeLost(node, FailureClass::kAgentLost,
             "its agent's session ended with workers unaccounted for", now_s, out);
  } else if (outcome_ == Outcome::kRunning && config_.restarts.max_restarts > 0 &&
             nodes_.NodeRankOf(node) >= 0 && !Restarting()) {
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

JobActions JobState::OnTick(double now_s, double loop_lag_s) {
  JobActions out;
  if (finished_) return out;
  SayHeldBackOutput(now_s, false, out);
  if (round_) {
    CheckLiveness(now_s, loop_lag_s, out);
    AdvanceRestart(now_s, out);
    CheckHealth(now_s, out);
    if (inquiry_.open() && now_s >= inquiry_.due_s()) ResolveStall(now_s, out);
    ledger_.Announce(now_s, false, current_round(), out);
    ScoreStragglers(now_s, out);
  }
  if (outcome_ == Outcome::kRunning && now_s - last_summary_s_ >= config_.summary_interval_s) {
    Say(SummaryLine(now_s, nodes_.MembersUp(), static_cast<int>(config_.hosts.size()),
                    nodes_.WorkersRunning(), round_ ? round_->world_size : 0, ranks_.all()),
        out);
    last_summary_s_ = now_s;
  }
  return out;
}

void JobState::CheckLiveness(double now_s, double loop_lag_s, JobActions& out) {
  // The one rule: silent past LivenessPolicy::lost_after() is lost (docs/restarts.md), counted
  // from what the launcher could have handled by now.
  const double lost_after = SecondsOf(liveness_.lost_after()) + loop_lag_s;
  SendPing ping;
  ping.nodes = nodes_.Reachable();
  for (const auto& [id, n] : nodes_.all()) {
    if (n.gone()) continue;
    const double silent_s = now_s - n.last_seen_s;
    if (n.spare()) {
      if (silent_s > lost_after + (n.session < 0 ? kSessionOpenSlackS : 0)) {
        SpareLost(id, absl::StrFormat("no heartbeat for %.1f s", silent_s), out);
      }
    } else if (n.open()) {
      if (outcome_ == Outcome::kRunning && silent_s > lost_after) {
        NodeLost(id, FailureClass::kNodeSilent, absl::StrFormat("no heartbeat for %.1f s", silent_s),
                 now_s, out);
      }
    } else if (n.session_state == SessionState::kNotOpened && outcome_ == Outcome::kRunning &&
               now_s - rendezvous_closed_at_s_ > lost_after + kSessionOpenSlackS) {
      NodeLost(id, FailureClass::kAgentLost, "its agent joined but never opened its session",
               now_s, out);
    }
  }
  if (!ping.nodes.empty()) out.insert(out.begin(), std::move(ping));
}

namespace {

// The first three of a kind of refusal, then the 10th, 100th, ...: what a flood costs the
// terminal and the journal grows with the logarithm of its size, and the count is always said.
bool SayRefusal(int64_t count) {
  if (count <= 3) return true;
  while (count % 10 == 0) count /= 10;
  return count == 1;
}

}  // namespace

JobActions JobState::OnCallRefused(const std::string& peer, const std::string& method) {
  JobActions out;
  if (!SayRefusal(++calls_refused_)) return out;
  RecordEvent(CallRefusedEvent(current_round(), peer, method, calls_refused_), out);
  return out;
}

void JobState::SayHeldBackOutput(double now_s, bool force, JobActions& out) {
  if (std::string note = output_budget_.Note(now_s, force); !note.empty()) {
    out.push_back(PrintLine{true, std::move(note)});
  }
}

JobActions JobState::OnJoinRefused(const std::string& why) {
  JobActions out;
  if (!SayRefusal(++joins_refused_)) return out;
  out.push_back(PrintLine{true, absl::StrCat("[dlaunch] refused a join: ", why,
                                             RefusedSoFar(joins_refused_))});
  return out;
}

}  // namespace dlaunch
