// Escalation: the one TERM -> grace -> KILL rule for ending processes, without I/O. Given the
// processes still there and the time, it says which to signal and when to look again; a driver
// lists the processes, sends the signals and keeps time (common/escalation_driver.h: on a
// TimerClock beside an event loop, or blocking where nothing else waits, as at the launcher's
// exit). Used by the agent's sweep of what the workers left (adopted daemons, then the workers'
// cgroup), by JobCgroup's own kill, by the launcher's relays' stop, and by ChildSupervisor.
//
// The rule: a process first seen before the deadline (start + grace) gets one SIGTERM; at the
// deadline every process still there gets one SIGKILL, as does one first seen after it (a
// daemon's child adopted late has no grace left). A later stop may bring the deadline forward,
// never push it back. It looks again every `poll` (and at the deadline) until no process is
// left, or gives up `give_up` after the deadline with what is still there.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <vector>

namespace dlaunch {

// What to do after one look.
struct EscalationStep {
  std::vector<pid_t> found;  // seen for the first time in this look (each also in term or kill)
  std::vector<pid_t> term;   // SIGTERM now
  std::vector<pid_t> kill;   // SIGKILL now
  // When to look again; nullopt once it is over (none left, or it gave up).
  std::optional<std::chrono::steady_clock::time_point> next;
};

class Escalation {
 public:
  using Time = std::chrono::steady_clock::time_point;
  struct Limits {
    std::chrono::milliseconds poll{10};      // how often to look whether they ended
    std::chrono::milliseconds give_up{5000};  // after the deadline, with processes still there
  };

  // grace <= 0: SIGKILL at the first look.
  Escalation(Time start, std::chrono::milliseconds grace, Limits limits);
  Escalation(Time start, std::chrono::milliseconds grace) : Escalation(start, grace, Limits{}) {}

  // `left`: the processes there at `now` (those that ended are not). A look after it is over
  // signals nothing.
  EscalationStep Look(const std::vector<pid_t>& left, Time now);
  // SIGKILL no later than `at` (the next Look at or after it sends it).
  void KillBy(Time at);

  Time kill_at() const { return kill_at_; }
  bool over() const { return over_; }
  // It gave up with these still there (empty: every process ended).
  const std::vector<pid_t>& gave_up_on() const { return gave_up_on_; }

 private:
  Time kill_at_;
  Limits limits_;
  std::map<pid_t, bool> killed_;  // every process seen and still there: whether it had SIGKILL
  std::vector<pid_t> gave_up_on_;
  bool over_ = false;
};

}  // namespace dlaunch
