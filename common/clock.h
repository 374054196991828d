// Time and one-shot timers for the supervisors, behind an interface so that tests move time by
// hand ("SIGKILL after the grace, not before") instead of sleeping.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>

#include <boost/asio.hpp>

namespace dlaunch {

using SteadyTime = std::chrono::steady_clock::time_point;

class TimerClock {
 public:
  using TimerId = uint64_t;

  virtual ~TimerClock() = default;
  virtual SteadyTime Now() const = 0;
  // Runs `fn` on the event loop's thread once `delay` has passed.
  virtual TimerId RunAfter(std::chrono::milliseconds delay, std::function<void()> fn) = 0;
  // Forgets a timer; a no-op when it already ran or was cancelled.
  virtual void Cancel(TimerId id) = 0;
};

// The real clock: std::chrono::steady_clock and one asio steady_timer per pending timer.
// Methods run on `io`'s thread.
class AsioTimerClock : public TimerClock {
 public:
  explicit AsioTimerClock(boost::asio::io_context& io);
  ~AsioTimerClock() override;

  SteadyTime Now() const override { return std::chrono::steady_clock::now(); }
  TimerId RunAfter(std::chrono::milliseconds delay, std::function<void()> fn) override;
  void Cancel(TimerId id) override;

 private:
  struct Pending;
  using PendingMap = std::map<TimerId, std::unique_ptr<Pending>>;

  boost::asio::io_context& io_;
  // Shared with the timers' handlers, which may already be queued when a timer is cancelled
  // (asio then still reports success), so a handler runs `fn` only if its entry is still here.
  std::shared_ptr<PendingMap> pending_;
  TimerId next_id_ = 1;
};

}  // namespace dlaunch
