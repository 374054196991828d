// ManualTimerClock: a TimerClock whose time moves only when a test calls Advance, running the
// timers that fall due in time order. For the supervisors' and the agent's tests; no sleeping.
#pragma once

#include <map>
#include <utility>

#include "common/clock.h"

namespace dlaunch {

class ManualTimerClock : public TimerClock {
 public:
  SteadyTime Now() const override { return now_; }

  TimerId RunAfter(std::chrono::milliseconds delay, std::function<void()> fn) override {
    TimerId id = next_id_++;
    timers_[id] = {now_ + delay, std::move(fn)};
    return id;
  }

  void Cancel(TimerId id) override { timers_.erase(id); }

  // Moves time forward by `d`, running each timer due on the way at its own time (ties in the
  // order they were set). A timer set by a callback runs too if it falls due within `d`.
  void Advance(std::chrono::milliseconds d) {
    const SteadyTime target = now_ + d;
    for (;;) {
      auto due = timers_.end();
      for (auto it = timers_.begin(); it != timers_.end(); ++it) {
        if (it->second.first <= target && (due == timers_.end() || it->second.first < due->second.first)) {
          due = it;
        }
      }
      if (due == timers_.end()) break;
      now_ = due->second.first;
      std::function<void()> fn = std::move(due->second.second);
      timers_.erase(due);
      fn();
    }
    now_ = target;
  }

  int pending() const { return static_cast<int>(timers_.size()); }

 private:
  SteadyTime now_{std::chrono::seconds(1000)};
  TimerId next_id_ = 1;
  std::map<TimerId, std::pair<SteadyTime, std::function<void()>>> timers_;
};

}  // namespace dlaunch
