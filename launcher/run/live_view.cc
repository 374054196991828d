#include "launcher/run/live_view.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "launcher/job/live_table.h"

namespace dlaunch {
namespace {

constexpr std::chrono::seconds kSnapshotPeriod(1);

}  // namespace

LiveView::LiveView(boost::asio::io_context& io, SnapshotSource source, LiveTerminal* terminal)
    : source_(std::move(source)), terminal_(terminal), timer_(io) {}

void LiveView::Start() { Tick(); }

v1::JobSnapshot LiveView::Take() const {
  v1::JobSnapshot s = source_();
  if (ended_) {
    s.set_ended(true);
    s.set_exit_code(*ended_);
  }
  return s;
}

void LiveView::Tick() {
  if (ended_) return;
  Publish();
  timer_.expires_after(kSnapshotPeriod);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) Tick();
  });
}

void LiveView::Publish() {
  v1::JobSnapshot snapshot = Take();
  watchers_.erase(std::remove_if(watchers_.begin(), watchers_.end(),
                                 [](const auto& w) { return w->closed(); }),
                  watchers_.end());
  for (const auto& w : watchers_) w->Send(snapshot);
  if (terminal_ && !ended_) {
    terminal_->Draw(RenderLiveTable(snapshot, terminal_->width(), terminal_->height()));
  }
}

void LiveView::End(int exit_code) {
  if (ended_) return;
  ended_ = exit_code;
  timer_.cancel();
  if (terminal_) terminal_->Close();
  Publish();
  watchers_.clear();
}

void LiveView::HandleWatch(std::shared_ptr<SnapshotSink> sink) {
  sink->Send(Take());
  if (!ended_) watchers_.push_back(std::move(sink));
}

}  // namespace dlaunch
