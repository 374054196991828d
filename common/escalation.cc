#include "common/escalation.h"

#include <algorithm>

namespace dlaunch {

Escalation::Escalation(Time start, std::chrono::milliseconds grace, Limits limits)
    : kill_at_(start + std::max(grace, std::chrono::milliseconds(0))), limits_(limits) {}

void Escalation::KillBy(Time at) { kill_at_ = std::min(kill_at_, at); }

EscalationStep Escalation::Look(const std::vector<pid_t>& left, Time now) {
  EscalationStep step;
  if (over_) return step;
  const bool past_deadline = now >= kill_at_;
  std::map<pid_t, bool> still;
  for (pid_t pid : left) {
    if (still.count(pid) > 0) continue;  // listed twice
    auto it = killed_.find(pid);
    bool killed = it != killed_.end() && it->second;
    if (it == killed_.end()) {
      step.found.push_back(pid);
      if (!past_deadline) step.term.push_back(pid);
    }
    if (past_deadline && !killed) {
      step.kill.push_back(pid);
      killed = true;
    }
    still[pid] = killed;
  }
  killed_ = std::move(still);  // what ended is forgotten (its pid may come back as another's)
  if (killed_.empty()) {
    over_ = true;
    return step;
  }
  if (now >= kill_at_ + limits_.give_up) {
    over_ = true;
    for (const auto& [pid, killed] : killed_) gave_up_on_.push_back(pid);
    return step;
  }
  Time next = now + limits_.poll;
  if (!past_deadline) next = std::min(next, kill_at_);
  step.next = next;
  return step;
}

}  // namespace dlaunch
