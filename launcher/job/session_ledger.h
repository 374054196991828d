// SessionLedger: the launcher's side of the agents' session protocol (docs/relays.md), decided
// without sockets or a clock. It keeps, by node id, the session that is current and what was
// heard on it: the newest `seq` of every node across its sessions (a message at or below it was
// sent again after a move), the newest `sent_ms` of the current session (echoed as `heard_ms`,
// what renews the agent's lease), and whether the session resumed one not seen to end. It says
// what to do with each message: drop it, answer it, send the last StartRound again. The shell
// (JobController) keeps the sockets and applies the answers; JobState decides the job.
//
// AdmitJoin is the rule for an agent that asks to join: into the rendezvous, as a spare, or
// refused.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "dlaunch/control.pb.h"
#include "launcher/job/job_actions.h"
#include "rendezvous/rendezvous_state.h"

namespace dlaunch {

// What the shell does with one agent message.
struct MessagePlan {
  // Sent again by an agent whose session moved, and handled already: JobState never sees it.
  bool drop = false;
  // Answer with an empty command once JobState has handled the message: the first heartbeat
  // of a resumed session, whose echo confirms the agent's move (within half the stop grace).
  bool answer = false;
  // Send the last StartRound again to this node: its i-th place (index into
  // SessionLedger::last_start()->node_ids). The agent's first message on a resumed session
  // was behind that round: the StartRound went with the relay.
  std::optional<size_t> resend_start;
};

// What goes back with every command to a node (LauncherCommand.heard_ms and .heard_seq).
struct SessionEcho {
  int64_t heard_ms = 0;
  std::optional<uint64_t> heard_seq;  // none: no numbered message heard from the node yet
};

class SessionLedger {
 public:
  // Session `session_id` opened for `node_id`. Returns true when it replaces a session that
  // was not seen to end: the agent moved it (its relay went, or its stream broke before the
  // launcher saw the end). The replaced session's messages are no longer echoed.
  bool Open(int session_id, int node_id);
  // Whether `session_id` is `node_id`'s current session.
  bool IsCurrent(int session_id, int node_id) const;
  // The session ended. Returns true when it was the node's current one (now forgotten); an
  // older session's end, arriving after its replacement opened, changes nothing.
  bool End(int session_id, int node_id);

  // One message from `node_id` on `session_id`.
  MessagePlan OnMessage(int session_id, int node_id, const v1::AgentMessage& message);

  // The echo for a command to `node_id`; none while it has no current session.
  std::optional<SessionEcho> EchoFor(int node_id) const;

  // A StartRound was sent: the one a resumed session may have missed.
  void NoteStartRound(const SendStartRound& start) { last_start_ = start; }
  const std::optional<SendStartRound>& last_start() const { return last_start_; }

  // Messages dropped as sent again after a move.
  int64_t messages_again() const { return messages_again_; }

 private:
  struct Session {
    int id = -1;
    int64_t heard_ms = 0;
    bool resumed = false;           // its first message is still to come
    bool answer_heartbeat = false;  // its first heartbeat is still to come
  };

  std::map<int, Session> sessions_;  // by node id: the current session of each node
  // The newest AgentMessage.seq processed from each node, in any of its sessions.
  std::unordered_map<int, uint64_t> heard_seq_;
  int64_t messages_again_ = 0;
  std::optional<SendStartRound> last_start_;
};

// What a StartRound carries as start_after_ms when it is written at `now_s` for workers that
// may start at `workers_start_at_s` (the job's clock): what is left, rounded up; 0 (at once)
// when nothing is.
int32_t StartAfterMs(double workers_start_at_s, double now_s);

// Where an agent's Join goes.
enum class JoinRoute {
  kRendezvous,           // the round is open; or it waits as a spare; or it is unfit, said apart
  kRendezvousLate,       // after the close without spares: refused as too late, and counted
  kRefused,              // after the close, one agent more than the job started: refused here
};
struct JoinAdmission {
  JoinRoute route = JoinRoute::kRendezvous;
  std::string why;  // kRefused: the reason, for the agent and the journal
};

// `closed`: the rendezvous round has closed; `accept_spares`: the job takes spares;
// `room_for_spare`: JobState::HasRoomForSpare(expected_agents); `expected_agents`: the agents
// the job started (0: not known).
JoinAdmission AdmitJoin(const Participant& participant, bool closed, bool accept_spares,
                        bool room_for_spare, int expected_agents);

}  // namespace dlaunch
