#include "common/escalation_driver.h"

#include <signal.h>

#include <thread>

namespace dlaunch {

void ApplyEscalationStep(const EscalationStep& step, const EscalationTarget& target) {
  if (target.found) {
    for (pid_t pid : step.found) target.found(pid);
  }
  if (!step.term.empty()) target.signal(step.term, SIGTERM);
  if (!step.kill.empty()) target.signal(step.kill, SIGKILL);
}

void EscalateBlocking(Escalation& escalation, const EscalationTarget& target) {
  while (!escalation.over()) {
    const EscalationStep step = escalation.Look(target.list(), std::chrono::steady_clock::now());
    ApplyEscalationStep(step, target);
    if (step.next) std::this_thread::sleep_until(*step.next);
  }
}

TimedEscalation::TimedEscalation(TimerClock& clock, EscalationTarget target,
                                 std::chrono::milliseconds grace, Escalation::Limits limits,
                                 std::function<void()> done)
    : clock_(clock),
      target_(std::move(target)),
      escalation_(clock.Now(), grace, limits),
      done_(std::move(done)) {}

TimedEscalation::~TimedEscalation() {
  if (timer_) clock_.Cancel(*timer_);
}

void TimedEscalation::Start() { LookNow(); }

void TimedEscalation::Hurry() {
  if (escalation_.over()) return;
  escalation_.KillBy(clock_.Now());
  LookNow();
}

void TimedEscalation::LookNow() {
  if (timer_) clock_.Cancel(*timer_);
  timer_.reset();
  const EscalationStep step = escalation_.Look(target_.list(), clock_.Now());
  ApplyEscalationStep(step, target_);
  if (!step.next) {
    // Last: `done` may destroy this object.
    std::function<void()> done = std::move(done_);
    done_ = nullptr;
    if (done) done();
    return;
  }
  const auto wait = std::chrono::ceil<std::chrono::milliseconds>(*step.next - clock_.Now());
  timer_ = clock_.RunAfter(std::max(wait, std::chrono::milliseconds(0)), [this] {
    timer_.reset();
    LookNow();
  });
}

}  // namespace dlaunch
