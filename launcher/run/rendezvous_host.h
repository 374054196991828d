// RendezvousHost: runs the job's RendezvousState on the event loop. It answers each Join when
// the round closes or fails, whether that happens on a later Join or at a deadline (a timer
// armed at the state's next deadline), so no thread waits and nothing polls. Time and the timer
// come from a TimerClock, so tests move time by hand.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "common/clock.h"
#include "launcher/control/control_handler.h"
#include "rendezvous/rendezvous_state.h"

namespace dlaunch {

class RendezvousHost {
 public:
  struct Callbacks {
    std::function<void(const Participant&, int joined, int expected)> on_joined;
    std::function<void(const RoundResult&)> on_closed;
    std::function<void(const absl::Status&)> on_failed;
    // Set when the job takes spares: an agent joining after the round closed is answered at
    // once as spare `node_id` (ids after the members') instead of FAILED_PRECONDITION.
    std::function<void(const Participant&, int node_id)> on_spare;
    // An agent whose node failed its preflight: it is told so and left out of the job.
    std::function<void(const Participant&)> on_unfit;
  };
  // Times are seconds since `start`, the job's start on `clock`, which the controller also
  // uses and which must outlive the host. `response_template` holds the job-wide fields of
  // every JoinResponse.
  RendezvousHost(TimerClock& clock, RendezvousConfig config, v1::JoinResponse response_template,
                 SteadyTime start, Callbacks callbacks);
  ~RendezvousHost();

  // Opens the round and arms the deadline timer, so a round that nobody joins still fails on
  // time. Joins before Start (no agent has been launched yet) are refused.
  void Start();
  // A Join from an agent whose earlier Join still waits (the same agent process: its call
  // through a relay broke before the launcher saw it go) replaces that one: the earlier call is
  // answered CANCELLED and the agent joins anew.
  void Join(const Participant& participant, JoinReply reply);
  bool closed() const { return state_.phase() == RendezvousPhase::kClosed; }
  // The agents the job started (0: not known).
  int expected_agents() const { return state_.config().expected_agents; }
  // The agent's waiting Join call `join_call` went away: it leaves the round. A cancel of a call
  // that a newer one replaced is ignored (`join_call` 0: whichever call waits).
  void Cancel(const std::string& agent_id, uint64_t join_call = 0);
  // Answers every waiting Join with CANCELLED and refuses later ones (the launcher is stopping).
  void Shutdown();

 private:
  double Now() const;
  void JoinAsSpare(const Participant& participant, JoinReply reply);
  // Advances the state, reports its outcome once, answers waiting Joins or re-arms the timer.
  void Settle();
  void CancelDeadline();

  TimerClock& clock_;
  RendezvousState state_;
  const v1::JoinResponse template_;
  const SteadyTime start_;
  Callbacks callbacks_;
  std::optional<TimerClock::TimerId> deadline_;
  struct Waiting {
    JoinReply reply;
    uint64_t call = 0;  // Participant::join_call
  };
  std::map<std::string, Waiting> waiting_;  // by agent id
  bool outcome_reported_ = false;
  bool accepting_ = false;  // between Start and Shutdown
  int spares_ = 0;
};

}  // namespace dlaunch
