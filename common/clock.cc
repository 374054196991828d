#include "common/clock.h"

namespace dlaunch {

struct AsioTimerClock::Pending {
  Pending(boost::asio::io_context& io, std::chrono::milliseconds delay, std::function<void()> f)
      : timer(io, delay), fn(std::move(f)) {}
  boost::asio::steady_timer timer;
  std::function<void()> fn;
};

AsioTimerClock::AsioTimerClock(boost::asio::io_context& io)
    : io_(io), pending_(std::make_shared<PendingMap>()) {}

AsioTimerClock::~AsioTimerClock() {
  for (auto& [id, p] : *pending_) p->timer.cancel();
}

TimerClock::TimerId AsioTimerClock::RunAfter(std::chrono::milliseconds delay, std::function<void()> fn) {
  TimerId id = next_id_++;
  auto pending = std::make_unique<Pending>(io_, delay, std::move(fn));
  pending->timer.async_wait(
      [weak = std::weak_ptr<PendingMap>(pending_), id](const boost::system::error_code& ec) {
        std::shared_ptr<PendingMap> map = weak.lock();
        if (ec || !map) return;
        auto it = map->find(id);
        if (it == map->end()) return;  // cancelled after it had already expired
        std::function<void()> fn = std::move(it->second->fn);
        map->erase(it);
        fn();
      });
  (*pending_)[id] = std::move(pending);
  return id;
}

void AsioTimerClock::Cancel(TimerId id) {
  auto it = pending_->find(id);
  if (it == pending_->end()) return;
  it->second->timer.cancel();
  pending_->erase(it);
}

}  // namespace dlaunch
