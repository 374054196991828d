// SimAgent's move of a broken session to the launcher itself (docs/relays.md, "When a relay is
// lost"), as dlaunch-agent moves its own: included at the end of sim_agent.h.
#pragma once

#include <atomic>
#include <memory>

#include "bench/scale/sim_agent.h"

namespace dlaunch::load {

// The session broke: a new SimAgent with this one's state opens a session with the fallback
// (a reactor serves one call) and the ticker reaches it through Current(). Unlike the real
// agent it does not number its messages or send any again: at a relay's loss in the steady
// phase only heartbeats are in flight.
inline void SimAgent::MoveToFallback() {
  double none = 0;
  g_first_break_unix.compare_exchange_strong(none, UnixNow());
  auto next = std::make_unique<SimAgent>(index_, opt_, fallback_stub_, token_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    next->AdoptStateOf(*this);
  }
  SimAgent* raw = next.get();
  successor_owned_ = std::move(next);
  successor_.store(raw, std::memory_order_release);
  g.sessions_moved++;
  raw->OpenMovedSession();
}

// Called with `o.mu_` held, on a SimAgent nothing else reaches yet.
inline void SimAgent::AdoptStateOf(const SimAgent& o) {
  agent_id_ = o.agent_id_;
  node_id_ = o.node_id_;
  round_ = o.round_;
  ended_round_ = o.ended_round_;
  rank_offset_ = o.rank_offset_;
  local_world_size_ = o.local_world_size_;
  heartbeat_ms_ = o.heartbeat_ms_;
  grace_ms_ = o.grace_ms_;
  max_restarts_ = o.max_restarts_;
  spare_ = o.spare_;
  forward_all_ = o.forward_all_;
  forward_ranks_ = o.forward_ranks_;
  running_ = o.running_;
  round_active_ = o.round_active_;
  started_a_round_ = o.started_a_round_;
  held_ = o.held_;
  step_ = o.step_;
  total_steps_ = o.total_steps_;
  output_lines_ = o.output_lines_;
  moved_ = true;
}

inline void SimAgent::OpenMovedSession() {
  std::unique_lock<std::mutex> lock(mu_);
  session_ctx_.AddMetadata(kTokenMetadataKey, token_);
  stub_->async()->Session(&session_ctx_, this);
  StartRead(&in_);
  session_open_ = true;
  lock.unlock();
  StartCall();
  Tick();  // the first message names the node: the launcher replaces its session
}

}  // namespace dlaunch::load
