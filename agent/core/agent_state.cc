#include "agent/core/agent_state.h"

#include <sys/wait.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/exit_codes.h"

namespace dlaunch {

WorkerOutcome ClassifyWorkerExit(int wait_status, bool stopped, bool stopping) {
  if (WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0) return WorkerOutcome::kSucceeded;
  if (stopped || stopping) return WorkerOutcome::kStopped;
  return WorkerOutcome::kFailed;
}

AgentState::AgentState(AgentConfig config)
    : liveness_(LivenessPolicy(config.heartbeat_interval, config.heartbeat_misses)
                    .WithLease(config.lease)),
      grace_(config.grace),
      exit_when_workers_end_(config.max_restarts == 0 && !config.spare),
      member_(!config.spare),
      round_(config.round),
      can_move_(config.can_move) {}

std::chrono::milliseconds AgentState::launcher_silence_limit() const {
  return liveness_.lease();
}

AgentActions AgentState::OnSessionOpened(Time now) {
  AgentActions out;
  session_open_ = true;
  last_from_launcher_ = now;
  last_tick_ = now;
  if (member_ && !started_a_round_) out = OnStartRound(round_);
  out.push_back(SendHeartbeat{});
  return out;
}

AgentActions AgentState::OnStartRound(int round, std::chrono::milliseconds hold) {
  AgentActions out;
  std::string refused;
  if (exit_requested_ || finished_) {
    refused = "this agent is on its way out";
  } else if (round < round_ || (started_a_round_ && round == round_)) {
    refused = absl::StrCat("this node is in round ", round_, " already");
  } else if (round_active_) {
    refused = absl::StrCat("round ", round_, "'s workers have not all ended");
  }
  if (!refused.empty()) {
    out.push_back(LogNote{absl::StrCat("ignored the start of round ", round, ": ", refused)});
    return out;
  }
  round_ = round;
  member_ = true;
  started_a_round_ = true;
  stopping_ = false;
  stop_sent_ = false;
  held_stop_.reset();
  round_failed_ = false;
  reports_drained_ = false;
  if (hold.count() > 0) {
    start_held_ = true;
    out.push_back(HoldStart{round, hold});
    return out;
  }
  out.push_back(StartWorkers{round});
  return out;
}

AgentActions AgentState::OnHeldStartDue(int round) {
  AgentActions out;
  if (!start_held_ || round != round_) return out;  // dropped meanwhile
  start_held_ = false;
  out.push_back(StartWorkers{round});
  return out;
}

AgentActions AgentState::OnWorkersStarted(int started, int failed) {
  AgentActions out;
  round_active_ = true;
  running_ = started;
  if (failed > 0) {
    // Counts as a failed worker: the launcher stops the job and names the rank.
    round_failed_ = true;
    Stop("a worker could not start", grace_, &out);
  }
  MaybeEndRound(&out);
  return out;
}

AgentActions AgentState::OnWorkerExit(const ChildExit& exit) {
  AgentActions out;
  running_ = std::max(0, running_ - 1);
  WorkerOutcome outcome = ClassifyWorkerExit(exit.wait_status, exit.stopped, stopping_);
  const bool succeeded = outcome == WorkerOutcome::kSucceeded;
  // A worker that ended on its own with an error fails the round, even if it raced a stop.
  if (outcome == WorkerOutcome::kFailed || (!succeeded && !exit.stopped)) round_failed_ = true;
  // Reports still pending for this rank go up before its exit event.
  out.push_back(FlushReports{});
  out.push_back(SendWorkerExit{exit, outcome});
  MaybeEndRound(&out);
  return out;
}

AgentActions AgentState::OnLauncherMessage(Time heard) {
  AgentActions out;
  last_from_launcher_ = std::max(last_from_launcher_, heard);
  if (moving() && moved_at_ && heard >= *moved_at_) {
    move_kill_at_.reset();
    moved_at_.reset();
    out.push_back(LogNote{"session moved: the launcher answers this node directly"});
  }
  return out;
}

AgentActions AgentState::OnStopCommand(const StopRequest& stop) {
  AgentActions out;
  if (stop.round < round_) {
    // It crossed this round's StartRound on the wire: the round it meant is over.
    out.push_back(LogNote{absl::StrCat("ignored a stop for round ", stop.round,
                                       ": this node is in round ", round_)});
    return out;
  }
  if (stop.exit) RequestExit(kExitOk);
  if (start_held_) {
    // Stopped before its workers were due: the round ends with none run.
    start_held_ = false;
    ended_round_ = round_;
    out.push_back(LogNote{absl::StrCat("round ", round_, " stopped before its workers started")});
    if (session_open_) out.push_back(SendRoundEnded{round_});
    MaybeExit(&out);
    return out;
  }
  if (round_active_) {
    if (held_stop_ && stop.grace.count() > 0) {
      // Another stop while the stacks are taken: the earlier grace and reason hold.
      held_stop_->grace = std::min(held_stop_->grace, stop.grace);
      return out;
    }
    if (!held_stop_ && !stop.dump_ranks.empty() && running_ > 0 && stop.dump_budget.count() > 0) {
      // The workers must not be stopped before their stacks are taken; whatever exits meanwhile
      // was asked to stop.
      stopping_ = true;
      held_stop_ = stop;
      out.push_back(DumpStacks{stop.dump_ranks, stop.dump_budget});
      return out;
    }
    Stop(absl::StrCat("launcher: ", stop.reason), stop.grace, &out);
    return out;
  }
  // Nothing runs. When this round's workers ended on their own, the RoundEnded already sent may
  // have crossed this stop; answering it again makes every stop end in a RoundEnded.
  if (!exit_requested_ && ended_round_ == round_ && stop.round == round_ && session_open_) {
    out.push_back(SendRoundEnded{round_});
  }
  MaybeExit(&out);
  return out;
}

AgentActions AgentState::OnStacksDumped() {
  AgentActions out;
  if (!held_stop_) return out;  // a late report of a dump whose stop went out already
  const StopRequest stop = *std::move(held_stop_);
  held_stop_.reset();
  if (round_active_) Stop(absl::StrCat("launcher: ", stop.reason), stop.grace, &out);
  return out;
}

AgentActions AgentState::OnSessionClosed(const std::string& why, Time now) {
  AgentActions out;
  CloseSession(absl::StrCat("lost the launcher (", why, ")"), LeaseGrace(now, grace_), &out);
  return out;
}

std::chrono::milliseconds AgentState::LeaseGrace(Time now, std::chrono::milliseconds grace) const {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      LeaseEnd() - now);
  return std::clamp(left, std::chrono::milliseconds(0), grace);
}

bool AgentState::LeavingAnyway() const {
  return exit_requested_ || (exit_when_workers_end_ && round_active_ && running_ == 0);
}

AgentActions AgentState::OnSessionBroken(Time now, const std::string& why) {
  AgentActions out;
  if (!session_open_ || !can_move_ || moving() || LeavingAnyway() || grace_.count() <= 0) {
    if (moving()) {
      GiveUpMove(now, absl::StrCat("lost the launcher (", why, ")"), &out);
    } else {
      CloseSession(absl::StrCat("lost the launcher (", why, ")"), LeaseGrace(now, grace_), &out);
    }
    return out;
  }
  can_move_ = false;  // once: the fallback is the launcher itself
  move_kill_at_ = now + grace_;
  moved_at_.reset();
  // Half the grace to find the launcher: the other half is the workers' to stop in.
  const auto give_up = std::min(grace_ / 2, launcher_silence_limit() / 2);
  out.push_back(LogNote{absl::StrCat("session broke (", why, "); the workers go on while it moves to the launcher")});
  out.push_back(MoveSession{give_up});
  return out;
}

AgentActions AgentState::OnSessionMoved(Time now) {
  AgentActions out;
  if (!moving() || !session_open_) return out;
  moved_at_ = now;
  out.push_back(SendHeartbeat{});
  return out;
}

AgentActions AgentState::OnMoveFailed(Time now, const std::string& why) {
  AgentActions out;
  if (moving()) GiveUpMove(now, absl::StrCat("lost the launcher: moving the session failed (", why, ")"), &out);
  return out;
}

AgentActions AgentState::OnMoveDeadline(Time now) {
  AgentActions out;
  if (moving()) GiveUpMove(now, "lost the launcher: no answer from it after the session broke", &out);
  return out;
}

std::chrono::milliseconds AgentState::CapGrace(Time now, std::chrono::milliseconds grace) const {
  if (!moving()) return grace;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*move_kill_at_ - now);
  return std::clamp(left, std::chrono::milliseconds(0), grace);
}

void AgentState::GiveUpMove(Time now, const std::string& why, AgentActions* out) {
  const std::chrono::milliseconds grace = LeaseGrace(now, CapGrace(now, grace_));
  move_kill_at_.reset();
  moved_at_.reset();
  CloseSession(why, grace, out);
}

void AgentState::CloseSession(const std::string& why, AgentActions* out) {
  CloseSession(why, grace_, out);
}

void AgentState::CloseSession(const std::string& why, std::chrono::milliseconds grace,
                              AgentActions* out, bool fenced) {
  if (!session_open_) return;
  move_kill_at_.reset();
  moved_at_.reset();
  session_open_ = false;
  start_held_ = false;  // no round starts without the launcher
  // Without the launcher no next round can come. Only an agent that was exiting anyway leaves
  // without counting it a failure; a fenced one kills what runs even then (a stop's grace
  // included: the launcher counts on nothing of this node running past the lease).
  if (!LeavingAnyway()) {
    RequestExit(kExitJobFailed);
    Stop(why, grace, out, fenced);
  } else if (fenced) {
    Stop(why, grace, out, fenced);
  }
  MaybeEndRound(out);
  MaybeExit(out);
}

AgentActions AgentState::OnTick(Time now) {
  AgentActions out;
  if (finished_) return out;
  const std::chrono::milliseconds interval = liveness_.heartbeat();
  if (now - last_tick_ > 2 * interval) judge_from_ = now + 2 * interval;
  last_tick_ = now;
  if (LeaseRanOut(now)) {
    Fence(now, std::chrono::duration_cast<std::chrono::milliseconds>(now - last_from_launcher_), &out);
  }
  // While a session moves, heartbeats wait for the new one (their reports with them).
  if (session_open_ && (!moving() || moved_at_)) out.push_back(SendHeartbeat{});
  return out;
}

bool AgentState::LeaseRanOut(Time now) const {
  return session_open_ && now >= judge_from_ && now > LeaseEnd();
}

std::optional<AgentState::Time> AgentState::lease_due() const {
  if (!session_open_ || finished_) return std::nullopt;
  return std::max(LeaseEnd() + std::chrono::milliseconds(1),
                  judge_from_);
}

AgentActions AgentState::OnLeaseDue(Time now, Time due) {
  AgentActions out;
  if (finished_) return out;
  const std::chrono::milliseconds interval = liveness_.heartbeat();
  if (now - due > interval) judge_from_ = std::max(judge_from_, now + 2 * interval);
  if (LeaseRanOut(now)) {
    Fence(now, std::chrono::duration_cast<std::chrono::milliseconds>(now - last_from_launcher_), &out);
  }
  return out;
}

void AgentState::Fence(Time now, std::chrono::milliseconds silent, AgentActions* out) {
  // The launcher may have declared this node lost and moved on to a round without it: the
  // workers must not go on, and the agent must not come back. A rank of a round the job has
  // left behind has nothing to save and everything to spoil (a checkpoint written by two rank
  // 0s), so they end at once: SIGKILL, no grace, and whatever they left behind with them.
  fenced_ = true;
  const std::string silence = absl::StrCat("no word from the launcher for ",
                                           static_cast<double>(silent.count()) / 1000, " s");
  out->push_back(LogNote{absl::StrCat("fenced: ", silence,
                                      "; this node kills its workers and leaves the job")});
  CloseSession(absl::StrCat("lost the launcher (", silence, ")"), std::chrono::milliseconds(0),
               out, /*fenced=*/true);
}

AgentActions AgentState::OnSignal(int sig, Time now) {
  AgentActions out;
  ++signals_seen_;
  RequestExit(kExitJobFailed);
  start_held_ = false;
  if (running_ > 0) {
    if (signals_seen_ > 1) {
      out.push_back(KillWorkers{});
    } else {
      Stop(absl::StrCat("received signal ", sig),
           CapGrace(now, grace_.count() > 0 ? grace_ : kSignalGrace), &out);
    }
  }
  MaybeExit(&out);
  return out;
}

AgentActions AgentState::OnReportConnectionClosed() {
  AgentActions out;
  MaybeEndRound(&out);
  return out;
}

AgentActions AgentState::OnReportsDrained() {
  AgentActions out;
  if (!round_active_ || running_ > 0) return out;  // a late drain timer of an ended round
  reports_drained_ = true;
  MaybeEndRound(&out);
  return out;
}

void AgentState::Stop(const std::string& why, std::chrono::milliseconds grace, AgentActions* out,
                      bool fenced) {
  // Whatever happens now, no held stop is left to apply later.
  held_stop_.reset();
  // (A fenced agent between rounds: what its last workers left behind goes as it exits.)
  if (running_ == 0) return;
  const bool first = !stop_sent_;
  stopping_ = true;
  stop_sent_ = true;
  out->push_back(StopWorkers{grace, why, first, fenced});
}

void AgentState::RequestExit(int code) {
  exit_requested_ = true;
  exit_code_ = std::max(exit_code_, code);
}

void AgentState::MaybeEndRound(AgentActions* out) {
  if (finished_ || !round_active_ || running_ > 0) return;
  if (!reports_drained_) {
    out->push_back(DrainReports{});
    return;
  }
  round_active_ = false;
  ended_round_ = round_;
  out->push_back(FlushReports{});
  if (session_open_) out->push_back(SendRoundEnded{round_});
  if (exit_when_workers_end_) RequestExit(round_failed_ ? kExitJobFailed : kExitOk);
  MaybeExit(out);
}

void AgentState::MaybeExit(AgentActions* out) {
  if (finished_ || !exit_requested_ || round_active_) return;
  finished_ = true;
  out->push_back(ExitAgent{exit_code_});
}

}  // namespace dlaunch
