#include "proto/agent_batch.h"

#include <utility>

namespace dlaunch {

std::vector<v1::AgentMessage> TakeBatch(
    std::deque<v1::AgentMessage>& queue,
    const std::function<void(const v1::AgentMessage&, size_t bytes)>& on_taken) {
  std::vector<v1::AgentMessage> taken;
  size_t bytes = 0;
  while (!queue.empty() && taken.size() < kMaxBatchMessages) {
    const size_t size = queue.front().ByteSizeLong();
    if (!taken.empty() && bytes + size > kMaxBatchBytes) break;
    bytes += size;
    if (on_taken) on_taken(queue.front(), size);
    taken.push_back(std::move(queue.front()));
    queue.pop_front();
  }
  return taken;
}

v1::AgentMessage Batched(std::vector<v1::AgentMessage> messages) {
  if (messages.size() == 1) return std::move(messages.front());
  v1::AgentMessage out;
  const v1::AgentMessage& last = messages.back();
  out.set_node_id(last.node_id());
  out.set_agent_id(last.agent_id());
  out.set_round(last.round());
  out.set_sent_ms(last.sent_ms());
  auto* batch = out.mutable_batch()->mutable_messages();
  batch->Reserve(static_cast<int>(messages.size()));
  for (v1::AgentMessage& m : messages) *batch->Add() = std::move(m);
  return out;
}

}  // namespace dlaunch
