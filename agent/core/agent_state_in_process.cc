// AgentState's part of the in-process restart (docs/restarts.md, "In-process restart"): which
// ranks a failure's stop keeps in their process, and how they leave one round and join the next.
//
// The ordering that keeps "no two rounds at once": a kept rank is told to leave round r and the
// agent's RoundEnded for r waits until it answered "left" (out of r's process group) or was
// ended; so when the launcher's barrier (every member's RoundEnded) lets round r+1 start, no
// rank of this node still takes part in r. It is told its place in r+1 only with the round's
// StartWorkers, after the StartRound's hold, as a new process would be started then.
#include <sys/wait.h>

#include "absl/strings/str_cat.h"
#include "agent/core/agent_state.h"

namespace dlaunch {

namespace {

std::string Seconds(std::chrono::milliseconds d) {
  return absl::StrCat(static_cast<double>(d.count()) / 1000, " s");
}

}  // namespace

std::vector<int> AgentState::parked_ranks() const {
  std::vector<int> ranks;
  for (const auto& [rank, phase] : kept_) {
    if (phase == KeptPhase::kParked) ranks.push_back(rank);
  }
  return ranks;
}

int AgentState::ranks_parked() const { return static_cast<int>(parked_ranks().size()); }

void AgentState::StopForRestart(const StopRequest& stop, AgentActions* out) {
  const std::string why = absl::StrCat("launcher: ", stop.reason);
  // A stop with no grace wants the workers gone now; one with exit ends the job.
  std::vector<int> leave;
  if (in_process_ && !stop.exit && !exit_requested_ && stop.grace.count() > 0) {
    for (int rank : can_keep_) {
      // A rank still taking its place in this round leaves it as the others do.
      auto [it, added] = kept_.emplace(rank, KeptPhase::kLeaving);
      if (!added && it->second != KeptPhase::kRejoining) continue;
      it->second = KeptPhase::kLeaving;
      leave.push_back(rank);
    }
  }
  if (kept_.empty()) {
    Stop(why, stop.grace, out);
    return;
  }
  held_stop_.reset();
  stopping_ = true;
  if (!leave.empty()) {
    // Half the grace to leave; a rank that does not is ended with the other half, so every
    // worker of this node is gone or out of the round within the grace the launcher counts on.
    leave_grace_ = stop.grace - stop.grace / 2;
    out->push_back(LeaveRound{round_, leave, stop.grace / 2});
  }
  if (running_ > static_cast<int>(kept_.size())) {
    StopWorkers s{stop.grace, why, !stop_sent_};
    for (const auto& [rank, phase] : kept_) s.keep.push_back(rank);
    stop_sent_ = true;
    out->push_back(std::move(s));
  }
}

void AgentState::StartRoundNow(int round, AgentActions* out) {
  StartWorkers start{round, parked_ranks()};
  // Ahead of the start: the shell puts each path on its rank's started event.
  for (const auto& [rank, why] : respawn_why_) out->push_back(NoteRankPath{round, rank, false, why});
  respawn_why_.clear();
  out->push_back(start);
  if (start.kept.empty()) return;
  for (int rank : start.kept) kept_[rank] = KeptPhase::kRejoining;
  out->push_back(RejoinRound{round, start.kept, kRejoinLimit});
}

bool AgentState::ForgetRank(const ChildExit& exit, AgentActions* out) {
  const int rank = exit.local_rank;
  can_keep_.erase(rank);
  kept_.erase(rank);
  if (respawn_.erase(rank) > 0 && round_active_ && !stopping_ && !exit_requested_) {
    if (auto it = respawn_why_.find(rank); it != respawn_why_.end()) {
      out->push_back(NoteRankPath{round_, rank, false, it->second});
      respawn_why_.erase(it);
    }
    out->push_back(StartRanks{round_, {rank}});
    return true;
  }
  const bool succeeded = WIFEXITED(exit.wait_status) && WEXITSTATUS(exit.wait_status) == 0;
  if (in_process_ && !succeeded) respawn_why_.emplace(rank, "its process ended");
  return false;
}

void AgentState::DropKept(int local_rank, const std::string& why,
                          std::chrono::milliseconds grace, AgentActions* out) {
  kept_.erase(local_rank);
  can_keep_.erase(local_rank);
  respawn_why_[local_rank] = why;
  out->push_back(LogNote{absl::StrCat("local rank ", local_rank, " starts anew: ", why)});
  out->push_back(EndRanks{{local_rank}, grace, why});
}

AgentActions AgentState::OnRankHello(int local_rank, bool in_process) {
  AgentActions out;
  if (in_process && in_process_ && round_active_ && !stopping_) {
    can_keep_.insert(local_rank);
  } else if (!in_process) {
    can_keep_.erase(local_rank);
  }
  return out;
}

AgentActions AgentState::OnRankLeft(int local_rank, int round) {
  AgentActions out;
  auto it = kept_.find(local_rank);
  if (it == kept_.end() || it->second != KeptPhase::kLeaving || round != round_ ||
      exit_requested_) {
    return out;  // late, or the agent is leaving anyway (the stop ends every rank)
  }
  it->second = KeptPhase::kParked;
  MaybeEndRound(&out);
  return out;
}

AgentActions AgentState::OnRankReady(int local_rank, int round) {
  AgentActions out;
  auto it = kept_.find(local_rank);
  if (it == kept_.end() || it->second != KeptPhase::kRejoining || round != round_) return out;
  kept_.erase(it);
  out.push_back(NoteRankPath{round, local_rank, true, ""});
  return out;
}

AgentActions AgentState::OnRankCannot(int local_rank, const std::string& why) {
  AgentActions out;
  auto it = kept_.find(local_rank);
  if (it == kept_.end()) {
    // Said before any stop: the next stop ends it like a rank that never could.
    can_keep_.erase(local_rank);
    return out;
  }
  const KeptPhase phase = it->second;
  const std::string reason = absl::StrCat("it cannot restart in process (", why, ")");
  if (phase == KeptPhase::kRejoining) {
    respawn_.insert(local_rank);
    DropKept(local_rank, reason, grace_, &out);
    return out;
  }
  DropKept(local_rank, reason, phase == KeptPhase::kLeaving ? leave_grace_ : grace_, &out);
  return out;
}

AgentActions AgentState::OnLeaveDeadline(int round) {
  AgentActions out;
  if (round != round_) return out;
  std::vector<int> late;
  for (const auto& [rank, phase] : kept_) {
    if (phase == KeptPhase::kLeaving) late.push_back(rank);
  }
  for (int rank : late) {
    DropKept(rank, absl::StrCat("it did not leave round ", round, " in time"), leave_grace_, &out);
  }
  return out;
}

AgentActions AgentState::OnRejoinDeadline(int round) {
  AgentActions out;
  if (round != round_) return out;
  std::vector<int> late;
  for (const auto& [rank, phase] : kept_) {
    if (phase == KeptPhase::kRejoining) late.push_back(rank);
  }
  for (int rank : late) {
    // Its peers wait for it in the new process group: a rank that cannot answer its own node
    // within the limit is wedged, and ends at once.
    respawn_.insert(rank);
    DropKept(rank,
             absl::StrCat("it did not take its place in round ", round, " within ",
                          Seconds(kRejoinLimit)),
             std::chrono::milliseconds(0), &out);
  }
  return out;
}

}  // namespace dlaunch
