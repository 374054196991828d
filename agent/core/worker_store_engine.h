// WorkerStoreEngine: the workers' key-value store as PyTorch's c10d TCPStore clients see it,
// with no sockets: bytes of each connection in, replies (to it and to the connections its
// writes wake) out. It speaks the wire protocol of both client generations and tells them apart
// per connection by the first query: PyTorch 2.x opens with VALIDATE and a magic number (its
// query types start with VALIDATE = 0), PyTorch 1.13 opens with any query (SET = 0). The
// semantics follow PyTorch's own servers (libuv backend where they differ). Every size a client
// sends is bounded (WorkerStoreLimits); a query that breaks the protocol or a bound is refused
// with a status naming it, and the caller closes that connection. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"

namespace dlaunch {

struct WorkerStoreLimits {
  size_t max_key_bytes = 8 * 1024;            // as PyTorch's libuv store
  size_t max_value_bytes = 8 * 1024 * 1024;   // as PyTorch's libuv store
  size_t max_keys_per_query = 128 * 1024;     // CHECK, WAIT, MULTI_GET, MULTI_SET
  size_t max_query_bytes = 64 * 1024 * 1024;  // one query, all its keys and values together
  size_t max_stored_bytes = size_t{1} << 30;  // keys and values held, queues included
};

// Which client a connection is, once its first query has been read.
enum class StoreDialect { kUnknown, kTorch1, kTorch2 };

class WorkerStoreEngine {
 public:
  using ConnectionId = uint64_t;
  struct Reply {
    ConnectionId to;
    std::string bytes;
  };

  explicit WorkerStoreEngine(WorkerStoreLimits limits = {});

  void Open(ConnectionId id);
  // Appends `bytes` to the connection's input and runs every complete query in it, appending
  // the replies to `replies`. An error means the connection broke the protocol or a bound: the
  // engine has forgotten it (as Close) and the caller must close it.
  absl::Status Feed(ConnectionId id, std::string_view bytes, std::vector<Reply>* replies);
  // Forgets the connection and any WAIT it had pending. Unknown ids are ignored.
  void Close(ConnectionId id);

  size_t num_keys() const { return data_.size(); }
  size_t open_connections() const { return connections_.size(); }
  size_t stored_bytes() const { return stored_bytes_; }
  StoreDialect dialect(ConnectionId id) const;

  // The queries, by what they do; each dialect numbers them its own way on the wire.
  enum class Op {
    kValidate, kSet, kCompareSet, kGet, kAdd, kCheck, kWait, kNumKeys, kDelete, kAppend,
    kMultiGet, kMultiSet, kCancelWait, kPing, kQueuePush, kQueuePop, kQueueLen, kListKeys,
    kWatchKey
  };
  struct Query {
    Op op = Op::kPing;
    std::vector<std::string> keys;
    std::vector<std::string> values;  // SET, APPEND, QUEUE_PUSH: one; COMPARE_SET: expected, desired
    int64_t number = 0;               // ADD's delta
    uint32_t word = 0;                // VALIDATE's magic, PING's nonce
  };

 private:
  struct Connection {
    std::string input;  // bytes not yet run
    size_t need = 1;    // input must hold this many bytes before the next parse can succeed
    StoreDialect dialect = StoreDialect::kUnknown;
    std::vector<std::string> waiting_on;  // keys of the pending WAIT not yet set
  };

  // Reads the dialect from the first bytes: OK and kUnknown while too few have come.
  absl::Status Detect(Connection& c) const;
  absl::Status Run(ConnectionId id, Connection& c, const Query& q, std::vector<Reply>* replies);
  // Queries that write keys: their own reply into `out`, the waiters they wake into `woken`.
  absl::Status RunWrite(const Query& q, std::string* out, std::vector<Reply>* woken);
  absl::Status RunAdd(const Query& q, std::string* out, std::vector<Reply>* woken);
  // Queries that only read (and WAIT, which may register the connection as a waiter).
  absl::Status RunRead(ConnectionId id, Connection& c, const Query& q, std::string* out);
  absl::Status Store(const std::string& key, std::string value);
  bool Present(const std::string& key) const;
  // A key was written: every WAIT on it counts it, and a WAIT with nothing left is answered.
  void Wake(const std::string& key, std::vector<Reply>* replies);
  // QUEUE_PUSH: only the first connection waiting on the queue counts it.
  void WakeOne(const std::string& key, std::vector<Reply>* replies);
  void Counted(ConnectionId id, const std::string& key, std::vector<Reply>* replies);
  void CancelWait(ConnectionId id, Connection& c);

  WorkerStoreLimits limits_;
  std::unordered_map<ConnectionId, Connection> connections_;
  std::unordered_map<std::string, std::string> data_;
  std::unordered_map<std::string, std::deque<std::string>> queues_;
  std::unordered_map<std::string, std::vector<ConnectionId>> waiters_;
  size_t stored_bytes_ = 0;
};

// The printable name of a query ("SET", "MULTI_GET", ...).
const char* StoreOpName(WorkerStoreEngine::Op op);

// PyTorch 2.x's VALIDATE magic number (c10d::detail::validationMagicNumber).
inline constexpr uint32_t kStoreValidationMagic = 0x3C85F7CE;

}  // namespace dlaunch
