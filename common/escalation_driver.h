// The drivers of Escalation (common/escalation.h): they list the processes, send the signals it
// asks for and look again when it says. TimedEscalation runs on a TimerClock, beside the event
// loop (the agent's sweep: its heartbeats go on meanwhile); EscalateBlocking sleeps between
// looks, for a caller with nothing else to do (the launcher's exit, a destructor).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <vector>

#include "common/clock.h"
#include "common/escalation.h"

namespace dlaunch {

// What an escalation works on.
struct EscalationTarget {
  // The processes left now (reaping what ended, where the caller is their parent).
  std::function<std::vector<pid_t>()> list;
  // Sends `sig` (SIGTERM or SIGKILL) to each of `pids`.
  std::function<void(const std::vector<pid_t>& pids, int sig)> signal;
  // Called once for each process as it is first seen, before its signal (to name it); optional.
  std::function<void(pid_t)> found;
};

// Applies one look's step to `target`: found, then SIGTERM, then SIGKILL.
void ApplyEscalationStep(const EscalationStep& step, const EscalationTarget& target);

// Looks, signals and sleeps until the escalation is over.
void EscalateBlocking(Escalation& escalation, const EscalationTarget& target);

// One escalation as timer steps on `clock`. `done` runs once it is over, from a timer, or from
// Start when the first look finds nothing. Destroying it cancels its timer (no `done`).
class TimedEscalation {
 public:
  TimedEscalation(TimerClock& clock, EscalationTarget target, std::chrono::milliseconds grace,
                  Escalation::Limits limits, std::function<void()> done);
  ~TimedEscalation();
  TimedEscalation(const TimedEscalation&) = delete;
  TimedEscalation& operator=(const TimedEscalation&) = delete;

  // The first look: SIGTERM (or SIGKILL, without grace) to what is there now.
  void Start();
  // SIGKILL to what is left, now (a fenced agent has no grace left to give).
  void Hurry();
  bool over() const { return escalation_.over(); }
  const Escalation& escalation() const { return escalation_; }

 private:
  void LookNow();

  TimerClock& clock_;
  EscalationTarget target_;
  Escalation escalation_;
  std::function<void()> done_;
  std::optional<TimerClock::TimerId> timer_;
};

}  // namespace dlaunch
