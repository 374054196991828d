#include "launcher/run/rendezvous_host.h"

#include <algorithm>
#include <utility>

#include "launcher/run/run_plan.h"

namespace dlaunch {

RendezvousHost::RendezvousHost(TimerClock& clock, RendezvousConfig config,
                               v1::JoinResponse response_template, SteadyTime start,
                               Callbacks callbacks)
    : clock_(clock),
      state_(std::move(config), 0.0),
      template_(std::move(response_template)),
      start_(start),
      callbacks_(std::move(callbacks)) {}

RendezvousHost::~RendezvousHost() { CancelDeadline(); }

double RendezvousHost::Now() const {
  return std::chrono::duration<double>(clock_.Now() - start_).count();
}

void RendezvousHost::CancelDeadline() {
  if (deadline_) clock_.Cancel(*deadline_);
  deadline_.reset();
}

void RendezvousHost::Start() {
  accepting_ = true;
  Settle();
}

void RendezvousHost::Join(const Participant& p, JoinReply reply) {
  if (!accepting_) {
    reply(absl::CancelledError("launcher is not accepting joins"));
    return;
  }
  if (!UnfitReasons(p).empty()) {
    // Refused by the state (and counted while the round is open), named by the job.
    absl::Status refused = state_.Join(p, Now());
    if (callbacks_.on_unfit) callbacks_.on_unfit(p);
    reply(refused);
    Settle();
    return;
  }
  if (state_.phase() == RendezvousPhase::kClosed && callbacks_.on_spare) {
    JoinAsSpare(p, std::move(reply));
    return;
  }
  if (auto earlier = waiting_.find(p.agent_id); earlier != waiting_.end()) {
    JoinReply replaced = std::move(earlier->second.reply);
    waiting_.erase(earlier);
    state_.Leave(p.agent_id, Now());
    replaced(absl::CancelledError("replaced by the agent's newer join"));
  }
  if (absl::Status st = state_.Join(p, Now()); !st.ok()) {
    reply(st);
    return;
  }
  callbacks_.on_joined(p, state_.joined(), state_.config().max_nodes);
  waiting_[p.agent_id] = Waiting{std::move(reply), p.join_call};
  Settle();
}

void RendezvousHost::JoinAsSpare(const Participant& p, JoinReply reply) {
  const int node_id = static_cast<int>(state_.result()->nodes.size()) + spares_++;
  v1::JoinResponse r = template_;
  r.set_node_id(node_id);
  r.set_spare(true);
  callbacks_.on_spare(p, node_id);
  reply(std::move(r));
}

void RendezvousHost::Cancel(const std::string& agent_id, uint64_t join_call) {
  auto it = waiting_.find(agent_id);
  if (it == waiting_.end()) return;
  if (join_call != 0 && it->second.call != join_call) return;  // a replaced call's
  JoinReply reply = std::move(it->second.reply);
  waiting_.erase(it);
  state_.Leave(agent_id, Now());
  reply(absl::CancelledError("agent went away"));
  Settle();
}

void RendezvousHost::Shutdown() {
  accepting_ = false;
  CancelDeadline();
  auto waiting = std::move(waiting_);
  waiting_.clear();
  for (auto& [id, w] : waiting) w.reply(absl::CancelledError("launcher is stopping"));
}

void RendezvousHost::Settle() {
  if (!accepting_) return;
  RendezvousPhase phase = state_.Poll(Now());
  if (phase == RendezvousPhase::kClosed || phase == RendezvousPhase::kFailed) {
    CancelDeadline();
    if (!outcome_reported_) {
      outcome_reported_ = true;
      if (phase == RendezvousPhase::kClosed) {
        callbacks_.on_closed(*state_.result());
      } else {
        callbacks_.on_failed(state_.failure());
      }
    }
    auto waiting = std::move(waiting_);
    waiting_.clear();
    for (auto& [id, w] : waiting) {
      const JoinReply& reply = w.reply;
      if (phase == RendezvousPhase::kFailed) {
        reply(state_.failure());
        continue;
      }
      const NodeAssignment* a = state_.AssignmentFor(id);
      if (a == nullptr) {
        reply(absl::FailedPreconditionError("not a member of the closed round"));
      } else {
        reply(MakeJoinResponse(template_, *state_.result(), *a));
      }
    }
    return;
  }
  std::optional<double> next = state_.NextDeadline();
  if (!next) return;
  // A millisecond past the deadline, so the Poll it triggers sees it passed.
  CancelDeadline();
  const auto delay = std::chrono::ceil<std::chrono::milliseconds>(
                         std::chrono::duration<double>(std::max(0.0, *next - Now()))) +
                     std::chrono::milliseconds(1);
  deadline_ = clock_.RunAfter(delay, [this] {
    deadline_.reset();
    Settle();
  });
}

}  // namespace dlaunch
