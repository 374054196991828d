#include "launcher/run/live_view.h"

#include <algorithm>
#include <utility>

#include "launcher/run/live_table.h"

namespace dlaunch {
namespace {

constexpr std::chrono::seconds kSnapshotPeriod(1);

}  // namespace

LiveView::LiveView(boost::asio::io_context& io, std::string job_id, int nodes_expected,
                   ControlHandler* inner, LiveTerminal* terminal)
    : io_(io),
      inner_(inner),
      terminal_(terminal),
      start_(std::chrono::steady_clock::now()),
      tracker_(std::move(job_id), nodes_expected),
      timer_(io) {}

double LiveView::Now() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void LiveView::Start() { Tick(); }

void LiveView::Tick() {
  if (ended_) return;
  Publish();
  timer_.expires_after(kSnapshotPeriod);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) Tick();
  });
}

void LiveView::Publish() {
  v1::JobSnapshot snapshot = tracker_.Snapshot(Now());
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
  ended_ = true;
  timer_.cancel();
  tracker_.OnEnded(exit_code);
  if (terminal_) terminal_->Close();
  Publish();
  watchers_.clear();
}

void LiveView::HandleJoin(const Participant& participant, JoinReply reply) {
  // The reply may come from any thread; the place is recorded back on the loop.
  inner_->HandleJoin(participant, [this, host = participant.host, reply = std::move(reply)](
                                      absl::StatusOr<v1::JoinResponse> result) {
    if (result.ok()) {
      boost::asio::post(io_, [this, host, place = *result] { tracker_.OnJoined(host, place); });
    }
    reply(std::move(result));
  });
}

void LiveView::HandleJoinCancelled(const std::string& agent_id) {
  inner_->HandleJoinCancelled(agent_id);
}

void LiveView::HandleSessionOpened(int session_id, int node_rank,
                                   std::shared_ptr<AgentSession> session) {
  tracker_.OnSessionOpened(node_rank, Now());
  inner_->HandleSessionOpened(session_id, node_rank, std::move(session));
}

void LiveView::HandleAgentMessage(int session_id, int node_rank, const v1::AgentMessage& message) {
  tracker_.OnAgentMessage(node_rank, message, Now());
  inner_->HandleAgentMessage(session_id, node_rank, message);
}

void LiveView::HandleSessionEnded(int session_id, int node_rank) {
  tracker_.OnSessionEnded(node_rank);
  inner_->HandleSessionEnded(session_id, node_rank);
}

void LiveView::HandleRefused(const std::string& peer, const std::string& method) {
  inner_->HandleRefused(peer, method);
}

void LiveView::HandleWatch(std::shared_ptr<SnapshotSink> sink) {
  sink->Send(tracker_.Snapshot(Now()));
  if (!ended_) watchers_.push_back(std::move(sink));
}

}  // namespace dlaunch
