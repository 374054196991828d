// Helpers for AgentState tests: synthetic times, worker exits, and looking into the actions an
// event returned. Header-only.
#pragma once

#include <chrono>
#include <variant>

#include "agent/core/agent_state.h"
#include "common/child_exit.h"

namespace dlaunch {
inline namespace agent_actions {

// A time point `ms` milliseconds after the agent's (synthetic) epoch.
inline AgentState::Time At(int ms) { return AgentState::Time(std::chrono::milliseconds(ms)); }

// Local rank = rank, pid = 100 + rank.
inline ChildExit Exit(int rank, int wait_status, bool stopped = false) {
  ChildExit e;
  e.rank = rank;
  e.local_rank = rank;
  e.pid = 100 + rank;
  e.wait_status = wait_status;
  e.stopped = stopped;
  return e;
}

template <typename T>
int Count(const AgentActions& actions) {
  int n = 0;
  for (const AgentAction& a : actions) n += std::holds_alternative<T>(a);
  return n;
}

// The first action of type T, or nullptr.
template <typename T>
const T* Find(const AgentActions& actions) {
  for (const AgentAction& a : actions) {
    if (const T* t = std::get_if<T>(&a)) return t;
  }
  return nullptr;
}

}  // namespace agent_actions
}  // namespace dlaunch
