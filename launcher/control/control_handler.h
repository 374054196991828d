// ControlHandler: what the launcher does with the control service's calls, in plain C++ and
// on the event loop's thread. The gRPC adapter (ControlService) only checks the token,
// translates, and posts each call here; replies and commands go back through the callbacks
// and AgentSession below, which never block the caller.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "dlaunch/control.pb.h"
#include "rendezvous/rendezvous_state.h"

namespace dlaunch {

// The launcher-to-agent half of one agent's session.
class AgentSession {
 public:
  virtual ~AgentSession() = default;
  // Queues `command` for the agent and returns at once; dropped once the stream has ended.
  virtual void Send(v1::LauncherCommand command) = 0;
};

// Completes one Join call; called exactly once, from any thread.
using JoinReply = std::function<void(absl::StatusOr<v1::JoinResponse>)>;

class ControlHandler {
 public:
  virtual ~ControlHandler() = default;
  virtual void HandleJoin(const Participant& participant, JoinReply reply) = 0;
  // The agent behind a waiting Join went away: the call `join_call` (Participant::join_call).
  virtual void HandleJoinCancelled(const std::string& agent_id, uint64_t join_call) = 0;
  // `session_id` is unique per stream; `node_id` (JoinResponse.node_id, stable across rounds)
  // comes from the agent's first message.
  virtual void HandleSessionOpened(int session_id, int node_id,
                                   std::shared_ptr<AgentSession> session) = 0;
  virtual void HandleAgentMessage(int session_id, int node_id,
                                  const v1::AgentMessage& message) = 0;
  virtual void HandleSessionEnded(int session_id, int node_id) = 0;
  // The relay at `relay` went with these sessions ({session_id, node_id}) still on it. Their
  // agents may open sessions with the launcher itself (docs/relays.md); by default they end.
  virtual void HandleSessionsMoving(const std::string& relay,
                                    const std::vector<std::pair<int, int>>& sessions) {
    (void)relay;
    for (const auto& [id, node] : sessions) HandleSessionEnded(id, node);
  }
  // A call without the job's token.
  virtual void HandleRefused(const std::string& peer, const std::string& method) = 0;
};

// The launcher-to-watcher half of one Watch call (`dlaunch watch`, `dlaunch status`).
class SnapshotSink {
 public:
  virtual ~SnapshotSink() = default;
  // Queues `snapshot` and returns at once; a snapshot not yet written is replaced by a newer
  // one. The stream ends OK after a snapshot with `ended` set; later ones are dropped.
  virtual void Send(const v1::JobSnapshot& snapshot) = 0;
  // The watcher went away (or the stream ended): stop sending.
  virtual bool closed() const = 0;
};

// What the launcher does with the collective check's calls (docs/stragglers.md), on the event
// loop's thread: `reply` answers the call, now or later.
class CollectiveCheckHandler {
 public:
  virtual ~CollectiveCheckHandler() = default;
  virtual void HandleCollectiveCheck(const v1::CollectiveCheckRequest& request,
                                     std::function<void(v1::CollectiveCheckResponse)> reply) = 0;
  // Answers every call still waiting (the launcher is stopping); on the loop's thread, or once
  // the loop has stopped.
  virtual void ShutdownCollectiveCheck() = 0;
};

// What the launcher does with Watch calls, on the event loop's thread.
class WatchHandler {
 public:
  virtual ~WatchHandler() = default;
  virtual void HandleWatch(std::shared_ptr<SnapshotSink> sink) = 0;
};

}  // namespace dlaunch
