// An agent's messages in batches (AgentBatch, proto/control.proto): what an agent has queued
// when its writer is free goes up in one write. At 10,000 agents a message costs the launcher
// about as much for gRPC's framing, TLS record and completion as for its content, so a round's
// four STARTED events, or a stop's exits and RoundEnded, in one message cost it a quarter.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <vector>

#include "dlaunch/control.pb.h"

namespace dlaunch {

// Bounds of one batch: well under the launcher's 4 MB receive limit, and few enough messages
// that one batch never holds a heartbeat back for long behind log lines.
inline constexpr size_t kMaxBatchMessages = 64;
inline constexpr size_t kMaxBatchBytes = 1 << 20;

// Takes messages from the front of `queue` while they fit the bounds (the first always);
// `on_taken` sees each with its serialized size.
std::vector<v1::AgentMessage> TakeBatch(
    std::deque<v1::AgentMessage>& queue,
    const std::function<void(const v1::AgentMessage&, size_t bytes)>& on_taken = nullptr);

// One message to write: the only one as it is, or several in an AgentBatch whose node_id,
// agent_id, round and sent_ms are its last message's. `messages` must not be empty.
v1::AgentMessage Batched(std::vector<v1::AgentMessage> messages);

}  // namespace dlaunch
