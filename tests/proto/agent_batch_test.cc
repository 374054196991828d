// Batches of an agent's messages (proto/agent_batch.h): what is taken, within which bounds, and
// what the batch says about itself.
#include "proto/agent_batch.h"

#include <deque>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace dlaunch {
namespace {

v1::AgentMessage Started(int rank, int64_t sent_ms) {
  v1::AgentMessage m;
  m.set_node_id(3);
  m.set_agent_id("h3:42:abc");
  m.set_round(1);
  m.set_sent_ms(sent_ms);
  m.mutable_worker()->set_rank(rank);
  m.mutable_worker()->set_state(v1::WorkerEvent::STARTED);
  return m;
}

v1::AgentMessage LogOf(size_t bytes) {
  v1::AgentMessage m;
  m.mutable_log()->add_lines(std::string(bytes, 'x'));
  return m;
}

TEST(AgentBatchTest, OneMessageGoesAsItIs) {
  std::deque<v1::AgentMessage> queue{Started(12, 100)};
  v1::AgentMessage out = Batched(TakeBatch(queue));
  EXPECT_TRUE(queue.empty());
  ASSERT_TRUE(out.has_worker());
  EXPECT_EQ(out.worker().rank(), 12);
}

TEST(AgentBatchTest, SeveralGoInOrderWithTheLastOnesStamp) {
  std::deque<v1::AgentMessage> queue;
  for (int r = 0; r < 4; ++r) queue.push_back(Started(12 + r, 100 + r));
  v1::AgentMessage out = Batched(TakeBatch(queue));
  EXPECT_TRUE(queue.empty());
  ASSERT_TRUE(out.has_batch());
  ASSERT_EQ(out.batch().messages_size(), 4);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(out.batch().messages(r).worker().rank(), 12 + r);
    EXPECT_EQ(out.batch().messages(r).sent_ms(), 100 + r);  // each keeps its own
  }
  EXPECT_EQ(out.node_id(), 3);
  EXPECT_EQ(out.agent_id(), "h3:42:abc");
  EXPECT_EQ(out.round(), 1);
  EXPECT_EQ(out.sent_ms(), 103);
  // What goes on the wire reads back the same.
  v1::AgentMessage back;
  ASSERT_TRUE(back.ParseFromString(out.SerializeAsString()));
  EXPECT_EQ(back.batch().messages(3).worker().rank(), 15);
}

TEST(AgentBatchTest, TakesAtMostTheMessageBound) {
  std::deque<v1::AgentMessage> queue;
  for (size_t i = 0; i < kMaxBatchMessages + 5; ++i) queue.push_back(Started(0, 1));
  EXPECT_EQ(TakeBatch(queue).size(), kMaxBatchMessages);
  EXPECT_EQ(queue.size(), 5u);
}

TEST(AgentBatchTest, StopsBeforeTheByteBoundButAlwaysTakesTheFirst) {
  std::deque<v1::AgentMessage> queue{LogOf(kMaxBatchBytes + 10), Started(0, 1)};
  std::vector<v1::AgentMessage> first = TakeBatch(queue);
  ASSERT_EQ(first.size(), 1u);  // an oversized message still goes, alone
  EXPECT_TRUE(first[0].has_log());
  ASSERT_EQ(queue.size(), 1u);

  queue = {LogOf(kMaxBatchBytes / 2), LogOf(kMaxBatchBytes / 2), Started(0, 1)};
  EXPECT_EQ(TakeBatch(queue).size(), 1u);  // the second would pass the bound
  EXPECT_EQ(queue.size(), 2u);
}

TEST(AgentBatchTest, TellsTheSizeOfEachMessageTaken) {
  std::deque<v1::AgentMessage> queue{LogOf(100), Started(0, 1), LogOf(200)};
  const size_t expected = queue[0].ByteSizeLong() + queue[2].ByteSizeLong();
  size_t log_bytes = 0;
  int seen = 0;
  TakeBatch(queue, [&](const v1::AgentMessage& m, size_t bytes) {
    ++seen;
    if (m.has_log()) log_bytes += bytes;
  });
  EXPECT_EQ(seen, 3);
  EXPECT_EQ(log_bytes, expected);
}

}  // namespace
}  // namespace dlaunch
