#include "agent/core/worker_store_engine.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "agent/core/worker_store_wire.h"

namespace dlaunch {
namespace {

// Queries as the clients write them (bytes captured from PyTorch 1.13 and 2.11 clients).
std::string U64(uint64_t v) { return std::string(reinterpret_cast<const char*>(&v), 8); }
std::string Str(const std::string& s) { return U64(s.size()) + s; }
std::string Type(int t) { return std::string(1, static_cast<char>(t)); }
std::string Validate() {
  std::string out = Type(0);
  AppendStoreU32(&out, kStoreValidationMagic);
  return out;
}
std::string I64(int64_t v) {
  std::string out;
  AppendStoreI64(&out, v);
  return out;
}

// PyTorch 2.x numbering.
enum V2 { kSet = 1, kCompareSet, kGet, kAdd, kCheck, kWait, kNumKeys, kDelete, kAppend,
          kMultiGet, kMultiSet, kCancelWait, kPing, kQueuePush, kQueuePop, kQueueLen, kListKeys };

class Engine {
 public:
  explicit Engine(WorkerStoreLimits limits = {}) : e_(limits) {}
  void Open(uint64_t id) { e_.Open(id); }
  // Feeds and returns the replies to `id` (concatenated); others land in others_.
  std::string Feed(uint64_t id, const std::string& bytes) {
    std::vector<WorkerStoreEngine::Reply> replies;
    status_ = e_.Feed(id, bytes, &replies);
    std::string mine;
    for (auto& r : replies) {
      if (r.to == id) mine += r.bytes;
      else others_.push_back(r);
    }
    return mine;
  }
  WorkerStoreEngine& engine() { return e_; }
  const absl::Status& status() const { return status_; }
  std::vector<WorkerStoreEngine::Reply>& others() { return others_; }

 private:
  WorkerStoreEngine e_;
  absl::Status status_;
  std::vector<WorkerStoreEngine::Reply> others_;
};

TEST(WorkerStoreEngineTest, Torch2ConnectSequence) {
  Engine e;
  e.Open(1);
  // VALIDATE, PING with the pid as nonce, then ADD "init/" 1: what TCPStore's constructor sends.
  std::string ping = Type(kPing);
  AppendStoreU32(&ping, 0x161b);
  EXPECT_EQ(e.Feed(1, Validate() + ping), std::string("\x1b\x16\0\0", 4));
  EXPECT_EQ(e.engine().dialect(1), StoreDialect::kTorch2);
  EXPECT_EQ(e.Feed(1, Type(kAdd) + Str("init/") + I64(1)), I64(1));
  EXPECT_TRUE(e.status().ok());
}

TEST(WorkerStoreEngineTest, Torch1SetGetAddCompareSetDelete) {
  Engine e;
  e.Open(1);
  // 1.13: SET = 0, COMPARE_SET = 1, GET = 2, ADD = 3, CHECK = 4, WAIT = 5, GETNUMKEYS = 6,
  // DELETE_KEY = 8.
  EXPECT_EQ(e.Feed(1, Type(3) + Str("init/") + I64(1)), I64(1));
  EXPECT_EQ(e.engine().dialect(1), StoreDialect::kTorch1);
  EXPECT_EQ(e.Feed(1, Type(0) + Str("/k") + Str("v")), "");
  EXPECT_EQ(e.Feed(1, Type(5) + U64(1) + Str("/k")), std::string(1, '\0'));  // STOP_WAITING
  EXPECT_EQ(e.Feed(1, Type(2) + Str("/k")), Str("v"));
  EXPECT_EQ(e.Feed(1, Type(3) + Str("/n") + I64(5)), I64(5));
  EXPECT_EQ(e.Feed(1, Type(1) + Str("/k") + Str("v") + Str("w")), Str("w"));
  EXPECT_EQ(e.Feed(1, Type(1) + Str("/k") + Str("v") + Str("x")), Str("w"));  // not swapped
  EXPECT_EQ(e.Feed(1, Type(6)), I64(3));
  EXPECT_EQ(e.Feed(1, Type(8) + Str("/k")), I64(1));
  EXPECT_EQ(e.Feed(1, Type(8) + Str("/k")), I64(0));
  EXPECT_EQ(e.Feed(1, Type(4) + U64(1) + Str("/k")), std::string(1, '\1'));  // NOT_READY
  EXPECT_TRUE(e.status().ok());
}

TEST(WorkerStoreEngineTest, Torch1SetOfAnEmptyKeyIsNotTakenForValidate) {
  Engine e;
  e.Open(1);
  EXPECT_EQ(e.Feed(1, Type(0) + Str("") + Str("v")), "");
  EXPECT_EQ(e.engine().dialect(1), StoreDialect::kTorch1);
  EXPECT_EQ(e.engine().num_keys(), 1u);
}

TEST(WorkerStoreEngineTest, WaitIsAnsweredWhenEveryKeyIsSet) {
  Engine e;
  e.Open(1);
  e.Open(2);
  e.Feed(1, Validate());
  e.Feed(2, Validate());
  EXPECT_EQ(e.Feed(1, Type(kWait) + U64(2) + Str("a") + Str("b")), "");
  EXPECT_EQ(e.Feed(2, Type(kSet) + Str("a") + Str("1")), "");
  EXPECT_TRUE(e.others().empty());
  EXPECT_EQ(e.Feed(2, Type(kAdd) + Str("b") + I64(2)), I64(2));
  ASSERT_EQ(e.others().size(), 1u);
  EXPECT_EQ(e.others()[0].to, 1u);
  EXPECT_EQ(e.others()[0].bytes, std::string(1, '\0'));
}

TEST(WorkerStoreEngineTest, CancelWaitAnswersCanceledAndForgetsTheWaiter) {
  Engine e;
  e.Open(1);
  e.Feed(1, Validate());
  EXPECT_EQ(e.Feed(1, Type(kWait) + U64(1) + Str("nope")), "");
  EXPECT_EQ(e.Feed(1, Type(kCancelWait)), std::string(1, '\1'));
  e.Open(2);
  e.Feed(2, Validate() + Type(kSet) + Str("nope") + Str("x"));
  EXPECT_TRUE(e.others().empty());
}

TEST(WorkerStoreEngineTest, ClosingAWaiterForgetsIt) {
  Engine e;
  e.Open(1);
  e.Open(2);
  e.Feed(1, Validate() + Type(kWait) + U64(1) + Str("k"));
  e.engine().Close(1);
  e.Feed(2, Validate() + Type(kSet) + Str("k") + Str("x"));
  EXPECT_TRUE(e.others().empty());
  EXPECT_EQ(e.engine().open_connections(), 1u);
}

TEST(WorkerStoreEngineTest, Torch2AppendMultiGetMultiSetQueuesListKeys) {
  Engine e;
  e.Open(1);
  e.Feed(1, Validate());
  EXPECT_EQ(e.Feed(1, Type(kAppend) + Str("a") + Str("x") + Type(kAppend) + Str("a") + Str("y")),
            "");
  EXPECT_EQ(e.Feed(1, Type(kMultiSet) + U64(2) + Str("m1") + Str("v1") + Str("m2") + Str("v2")),
            "");
  EXPECT_EQ(e.Feed(1, Type(kMultiGet) + U64(3) + Str("a") + Str("m2") + Str("m1")),
            Str("xy") + Str("v2") + Str("v1"));
  EXPECT_EQ(e.Feed(1, Type(kQueuePush) + Str("q") + Str("x")), "");
  EXPECT_EQ(e.Feed(1, Type(kQueueLen) + Str("q")), I64(1));
  EXPECT_EQ(e.Feed(1, Type(kCheck) + U64(1) + Str("q")), std::string(1, '\0'));
  EXPECT_EQ(e.Feed(1, Type(kQueuePop) + Str("q")), I64(1) + Str("x"));
  EXPECT_EQ(e.Feed(1, Type(kQueuePop) + Str("q")), I64(0));
  const std::string listed = e.Feed(1, Type(kListKeys));
  EXPECT_EQ(listed.substr(0, 8), I64(3));
  EXPECT_EQ(listed.size(), 8u + 3 * 8 + 1 + 2 + 2);
  EXPECT_TRUE(e.status().ok());
}

TEST(WorkerStoreEngineTest, QueuePushWakesOneWaiter) {
  Engine e;
  for (uint64_t id : {1, 2, 3}) {
    e.Open(id);
    e.Feed(id, Validate());
  }
  e.Feed(1, Type(kWait) + U64(1) + Str("q"));
  e.Feed(2, Type(kWait) + U64(1) + Str("q"));
  e.Feed(3, Type(kQueuePush) + Str("q") + Str("x"));
  ASSERT_EQ(e.others().size(), 1u);
  EXPECT_EQ(e.others()[0].to, 1u);
}

TEST(WorkerStoreEngineTest, QueriesSplitAnywhereAndBatchedAreRunInOrder) {
  Engine e;
  e.Open(1);
  const std::string all = Validate() + Type(kSet) + Str("k") + Str("value") + Type(kGet) +
                          Str("k") + Type(kAdd) + Str("n") + I64(-3);
  std::string replies;
  for (char ch : all) replies += e.Feed(1, std::string(1, ch));
  EXPECT_EQ(replies, Str("value") + I64(-3));
  e.Open(2);
  EXPECT_EQ(e.Feed(2, all), Str("value") + I64(-6));
}

TEST(WorkerStoreEngineTest, AddToANonNumberIsRefused) {
  Engine e;
  e.Open(1);
  e.Feed(1, Validate() + Type(kSet) + Str("k") + Str("abc"));
  e.Feed(1, Type(kAdd) + Str("k") + I64(1));
  EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(e.status().message(),
            "PyTorch 2.x client: ADD to key 'k', whose value is not a number");
  EXPECT_EQ(e.engine().open_connections(), 0u);
}

TEST(WorkerStoreEngineTest, BoundsAreRefusedNamingThem) {
  WorkerStoreLimits limits;
  limits.max_key_bytes = 4;
  limits.max_value_bytes = 8;
  limits.max_keys_per_query = 2;
  limits.max_stored_bytes = 19;
  Engine e(limits);
  auto refused = [&](const std::string& query) {
    e.Open(9);
    e.Feed(9, Validate() + query);
    return std::string(e.status().message());
  };
  EXPECT_EQ(refused(Type(kSet) + Str("12345") + Str("v")),
            "PyTorch 2.x client: SET: a key of 5 bytes is more than the 4 bytes allowed");
  EXPECT_EQ(refused(Type(kSet) + Str("k") + U64(uint64_t{1} << 40)),
            "PyTorch 2.x client: SET: a value of 1099511627776 bytes is more than the 8 bytes "
            "allowed");
  EXPECT_EQ(refused(Type(kWait) + U64(3)),
            "PyTorch 2.x client: WAIT: a query naming 3 keys is more than the 2 allowed");
  EXPECT_EQ(refused(Type(kSet) + Str("k1") + Str("12345678") + Type(kSet) + Str("k2") +
                    Str("12345678")),
            "PyTorch 2.x client: writing key 'k2' would make the store hold more than 19 bytes");
  EXPECT_EQ(refused(Type(99)),
            "PyTorch 2.x client: query type 99 is not one of PyTorch 2.x's (0..17)");
  EXPECT_EQ(e.engine().num_keys(), 1u);  // k1 was written before k2 was refused
}

TEST(WorkerStoreEngineTest, AQueryLargerThanTheBoundIsRefusedBeforeItArrives) {
  WorkerStoreLimits limits;
  limits.max_query_bytes = 64;
  Engine e(limits);
  e.Open(1);
  e.Feed(1, Validate() + Type(kMultiSet) + U64(2) + Str("k"));
  EXPECT_TRUE(e.status().ok());
  e.Feed(1, U64(40));  // 1 + 8 + 9 + 8 + 40 = 66 bytes: refused before they come
  EXPECT_EQ(e.status().message(),
            "PyTorch 2.x client: MULTI_SET: a query of more than 64 bytes (the most one query "
            "may hold)");
}

TEST(WorkerStoreEngineTest, NotAStoreClientIsRefusedAtOnce) {
  Engine e;
  e.Open(1);
  e.Feed(1, "GET / HTTP/1.1\r\n");
  EXPECT_EQ(e.status().message(),
            "the first query (type 71) is neither PyTorch 2.x's VALIDATE nor a PyTorch 1.13 "
            "query: not a c10d TCPStore client");
  e.Open(2);
  std::string bad = Type(0);
  AppendStoreU32(&bad, kStoreValidationMagic);
  bad[1] ^= 1;  // not the magic: read as 1.13's SET with a huge key
  e.Feed(2, bad + std::string(8, '\0'));
  EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(WorkerStoreEngineTest, Torch1WatchKeyIsRefused) {
  Engine e;
  e.Open(1);
  e.Feed(1, Type(7) + Str("k"));
  EXPECT_EQ(e.status().code(), absl::StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace dlaunch
