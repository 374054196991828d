// The input form of the agent_messages target, shared with the program that writes its seeds:
// a job's config and the agents' places, and a reader of bytes that never runs past the end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "launcher/job/job_state.h"
#include "tests/testing/job_actions.h"

namespace dlaunch::fuzz {

class AgentInput {
 public:
  AgentInput(const uint8_t* data, size_t size)
      : text_(reinterpret_cast<const char*>(data), size) {}

  bool empty() const { return text_.empty(); }
  // The next byte; 0 past the end.
  uint8_t Byte() {
    if (text_.empty()) return 0;
    const auto b = static_cast<uint8_t>(text_[0]);
    text_.remove_prefix(1);
    return b;
  }
  // A chunk: a two-byte big-endian length, then that many bytes (fewer at the end).
  std::string_view Chunk() {
    const size_t length = (size_t{Byte()} << 8) | Byte();
    const std::string_view chunk = text_.substr(0, length);
    text_.remove_prefix(chunk.size());
    return chunk;
  }

 private:
  std::string_view text_;
};

// The job of `nodes` nodes the target drives: the unit tests' job (heartbeat 1 s x 3, stop
// grace 2 s, the summary every 5 s) over ssh, with `max_restarts` restart rounds.
inline JobConfig AgentJobConfig(int nodes, int max_restarts) {
  JobConfig c = TestJobConfig(nodes);
  c.node_launcher = "ssh";
  c.restarts.max_restarts = max_restarts;
  c.min_nodes = 1;
  return c;
}

inline Participant AgentPlace(int i, int slots) {
  Participant p;
  p.agent_id = "a" + std::to_string(i);
  p.host = "n" + std::to_string(i);
  p.addr = "10.0.0." + std::to_string(i + 1);
  p.slots = slots;
  p.worker_port = 29500 + i;
  return p;
}

}  // namespace dlaunch::fuzz
