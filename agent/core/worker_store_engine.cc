#include "agent/core/worker_store_engine.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "agent/core/worker_store_wire.h"

namespace dlaunch {

const char* StoreOpName(WorkerStoreEngine::Op op) {
  using Op = WorkerStoreEngine::Op;
  switch (op) {
    case Op::kValidate: return "VALIDATE";
    case Op::kSet: return "SET";
    case Op::kCompareSet: return "COMPARE_SET";
    case Op::kGet: return "GET";
    case Op::kAdd: return "ADD";
    case Op::kCheck: return "CHECK";
    case Op::kWait: return "WAIT";
    case Op::kNumKeys: return "GETNUMKEYS";
    case Op::kDelete: return "DELETE_KEY";
    case Op::kAppend: return "APPEND";
    case Op::kMultiGet: return "MULTI_GET";
    case Op::kMultiSet: return "MULTI_SET";
    case Op::kCancelWait: return "CANCEL_WAIT";
    case Op::kPing: return "PING";
    case Op::kQueuePush: return "QUEUE_PUSH";
    case Op::kQueuePop: return "QUEUE_POP";
    case Op::kQueueLen: return "QUEUE_LEN";
    case Op::kListKeys: return "LIST_KEYS";
    case Op::kWatchKey: return "WATCH_KEY";
  }
  return "?";
}

WorkerStoreEngine::WorkerStoreEngine(WorkerStoreLimits limits) : limits_(limits) {}

void WorkerStoreEngine::Open(ConnectionId id) { connections_.try_emplace(id); }

StoreDialect WorkerStoreEngine::dialect(ConnectionId id) const {
  auto it = connections_.find(id);
  return it == connections_.end() ? StoreDialect::kUnknown : it->second.dialect;
}

absl::Status WorkerStoreEngine::Detect(Connection& c) const {
  const auto first = static_cast<uint8_t>(c.input[0]);
  if (first == 0) {
    // PyTorch 2.x's VALIDATE or 1.13's SET: 2.x follows with the magic number, where 1.13's
    // SET has the low half of its key's length (a length that large is refused anyway).
    if (c.input.size() < 5) {
      c.need = 5;
      return absl::OkStatus();
    }
    uint32_t magic = 0;
    std::memcpy(&magic, c.input.data() + 1, sizeof magic);
    c.dialect = magic == kStoreValidationMagic ? StoreDialect::kTorch2 : StoreDialect::kTorch1;
    return absl::OkStatus();
  }
  if (first <= 8) {  // 1.13's COMPARE_SET .. DELETE_KEY; 2.x always opens with VALIDATE
    c.dialect = StoreDialect::kTorch1;
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "the first query (type %d) is neither PyTorch 2.x's VALIDATE nor a PyTorch 1.13 query: "
      "not a c10d TCPStore client",
      first));
}

absl::Status WorkerStoreEngine::Feed(ConnectionId id, std::string_view bytes,
                                     std::vector<Reply>* replies) {
  auto it = connections_.find(id);
  if (it == connections_.end()) {
    return absl::FailedPreconditionError(absl::StrCat("no open store connection ", id));
  }
  Connection& c = it->second;
  c.input.append(bytes.data(), bytes.size());
  size_t pos = 0;
  absl::Status st;
  while (st.ok() && c.input.size() - pos >= c.need) {
    if (c.dialect == StoreDialect::kUnknown) {
      st = Detect(c);
      if (!st.ok() || c.dialect == StoreDialect::kUnknown) break;
    }
    ParsedQuery p = ParseStoreQuery(std::string_view(c.input).substr(pos), c.dialect, limits_);
    if (p.state == ParsedQuery::State::kNeedMore) {
      c.need = p.need;
      break;
    }
    if (p.state == ParsedQuery::State::kBad) {
      st = absl::InvalidArgumentError(p.error);
      break;
    }
    pos += p.consumed;
    c.need = 1;
    st = Run(id, c, p.query, replies);
  }
  if (!st.ok()) {
    const char* who = c.dialect == StoreDialect::kTorch2   ? "PyTorch 2.x client: "
                      : c.dialect == StoreDialect::kTorch1 ? "PyTorch 1.13 client: "
                                                           : "";
    Close(id);
    return absl::Status(st.code(), absl::StrCat(who, st.message()));
  }
  c.input.erase(0, pos);
  return absl::OkStatus();
}

void WorkerStoreEngine::Close(ConnectionId id) {
  auto it = connections_.find(id);
  if (it == connections_.end()) return;
  CancelWait(id, it->second);
  connections_.erase(it);
}

bool WorkerStoreEngine::Present(const std::string& key) const {
  if (data_.count(key) > 0) return true;
  auto q = queues_.find(key);
  return q != queues_.end() && !q->second.empty();
}

absl::Status WorkerStoreEngine::Store(const std::string& key, std::string value) {
  auto it = data_.find(key);
  const size_t old = it == data_.end() ? 0 : key.size() + it->second.size();
  const size_t now = key.size() + value.size();
  if (stored_bytes_ - old + now > limits_.max_stored_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "writing key '", key, "' would make the store hold more than ",
        limits_.max_stored_bytes, " bytes"));
  }
  stored_bytes_ = stored_bytes_ - old + now;
  if (it == data_.end()) {
    data_.emplace(key, std::move(value));
  } else {
    it->second = std::move(value);
  }
  return absl::OkStatus();
}

void WorkerStoreEngine::Counted(ConnectionId id, const std::string& key,
                                std::vector<Reply>* replies) {
  auto it = connections_.find(id);
  if (it == connections_.end()) return;
  std::vector<std::string>& waiting = it->second.waiting_on;
  auto k = std::find(waiting.begin(), waiting.end(), key);
  if (k == waiting.end()) return;
  waiting.erase(k);
  if (waiting.empty()) {
    std::string out;
    AppendStoreU8(&out, kStoreStopWaiting);
    replies->push_back({id, std::move(out)});
  }
}

void WorkerStoreEngine::Wake(const std::string& key, std::vector<Reply>* replies) {
  auto it = waiters_.find(key);
  if (it == waiters_.end()) return;
  std::vector<ConnectionId> ids = std::move(it->second);
  waiters_.erase(it);
  for (ConnectionId id : ids) Counted(id, key, replies);
}

void WorkerStoreEngine::WakeOne(const std::string& key, std::vector<Reply>* replies) {
  auto it = waiters_.find(key);
  if (it == waiters_.end()) return;
  const ConnectionId id = it->second.front();
  it->second.erase(it->second.begin());
  if (it->second.empty()) waiters_.erase(it);
  Counted(id, key, replies);
}

void WorkerStoreEngine::CancelWait(ConnectionId id, Connection& c) {
  for (const std::string& key : c.waiting_on) {
    auto it = waiters_.find(key);
    if (it == waiters_.end()) continue;
    std::vector<ConnectionId>& ids = it->second;
    ids.erase(std::remove(ids.begin(), ids.end(), id), ids.end());
    if (ids.empty()) waiters_.erase(it);
  }
  c.waiting_on.clear();
}


absl::Status WorkerStoreEngine::Run(ConnectionId id, Connection& c, const Query& q,
                                    std::vector<Reply>* replies) {
  std::string out;
  std::vector<Reply> woken;
  absl::Status st;
  switch (q.op) {
    case Op::kSet:
    case Op::kAppend:
    case Op::kCompareSet:
    case Op::kMultiSet:
    case Op::kDelete:
    case Op::kQueuePush:
      st = RunWrite(q, &out, &woken);
      break;
    case Op::kAdd:
      st = RunAdd(q, &out, &woken);
      break;
    default:
      st = RunRead(id, c, q, &out);
      break;
  }
  if (!st.ok()) return st;
  // The writer hears its answer before the waiters it woke, as from PyTorch's servers.
  if (!out.empty()) replies->push_back({id, std::move(out)});
  for (Reply& r : woken) replies->push_back(std::move(r));
  return absl::OkStatus();
}

absl::Status WorkerStoreEngine::RunWrite(const Query& q, std::string* out,
                                         std::vector<Reply>* woken) {
  const std::string& key = q.keys.empty() ? std::string() : q.keys[0];
  switch (q.op) {
    case Op::kSet:
    case Op::kMultiSet:
      for (size_t i = 0; i < q.keys.size(); ++i) {
        if (absl::Status st = Store(q.keys[i], q.values[i]); !st.ok()) return st;
        Wake(q.keys[i], woken);
      }
      return absl::OkStatus();
    case Op::kAppend: {
      auto it = data_.find(key);
      std::string value = it == data_.end() ? q.values[0] : it->second + q.values[0];
      if (absl::Status st = Store(key, std::move(value)); !st.ok()) return st;
      Wake(key, woken);
      return absl::OkStatus();
    }
    case Op::kCompareSet: {
      const std::string& expected = q.values[0];
      auto it = data_.find(key);
      // A missing key is created only when the caller expected it missing (an empty value);
      // otherwise the caller is told its expected value, as PyTorch's servers do.
      const bool swap = it == data_.end() ? expected.empty() : it->second == expected;
      if (swap) {
        if (absl::Status st = Store(key, q.values[1]); !st.ok()) return st;
        Wake(key, woken);
      }
      auto now = data_.find(key);
      AppendStoreBytes(out, now != data_.end() ? now->second : expected);
      return absl::OkStatus();
    }
    case Op::kDelete: {
      auto it = data_.find(key);
      int64_t erased = 0;
      if (it != data_.end()) {
        stored_bytes_ -= key.size() + it->second.size();
        data_.erase(it);
        erased = 1;
      }
      AppendStoreI64(out, erased);
      return absl::OkStatus();
    }
    default: {  // kQueuePush
      if (stored_bytes_ + key.size() + q.values[0].size() > limits_.max_stored_bytes) {
        return absl::ResourceExhaustedError(absl::StrCat(
            "pushing to queue '", key, "' would make the store hold more than ",
            limits_.max_stored_bytes, " bytes"));
      }
      stored_bytes_ += key.size() + q.values[0].size();
      queues_[key].push_back(q.values[0]);
      WakeOne(key, woken);
      return absl::OkStatus();
    }
  }
}

absl::Status WorkerStoreEngine::RunAdd(const Query& q, std::string* out,
                                       std::vector<Reply>* woken) {
  const std::string& key = q.keys[0];
  int64_t sum = q.number;
  if (auto it = data_.find(key); it != data_.end()) {
    int64_t current = 0;
    if (!absl::SimpleAtoi(it->second, &current)) {
      return absl::InvalidArgumentError(
          absl::StrCat("ADD to key '", key, "', whose value is not a number"));
    }
    if (__builtin_add_overflow(current, q.number, &sum)) {
      return absl::InvalidArgumentError(
          absl::StrCat("ADD of ", q.number, " to key '", key, "' (", current, ") overflows"));
    }
  }
  if (absl::Status st = Store(key, std::to_string(sum)); !st.ok()) return st;
  AppendStoreI64(out, sum);
  Wake(key, woken);
  return absl::OkStatus();
}

absl::Status WorkerStoreEngine::RunRead(ConnectionId id, Connection& c, const Query& q,
                                        std::string* out) {
  switch (q.op) {
    case Op::kValidate:
      if (q.word != kStoreValidationMagic) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "VALIDATE with magic number 0x%08X (0x%08X expected)", q.word, kStoreValidationMagic));
      }
      return absl::OkStatus();
    case Op::kPing:
      AppendStoreU32(out, q.word);
      return absl::OkStatus();
    case Op::kGet:
    case Op::kMultiGet:
      // A missing key reads as empty (PyTorch's libuv store); clients WAIT for it first.
      for (const std::string& key : q.keys) {
        auto it = data_.find(key);
        AppendStoreBytes(out, it == data_.end() ? std::string_view() : it->second);
      }
      return absl::OkStatus();
    case Op::kCheck:
      AppendStoreU8(out, std::all_of(q.keys.begin(), q.keys.end(),
                                     [this](const std::string& k) { return Present(k); })
                             ? kStoreReady
                             : kStoreNotReady);
      return absl::OkStatus();
    case Op::kWait:
      CancelWait(id, c);
      for (const std::string& key : q.keys) {
        if (Present(key)) continue;
        waiters_[key].push_back(id);
        c.waiting_on.push_back(key);
      }
      if (c.waiting_on.empty()) AppendStoreU8(out, kStoreStopWaiting);
      return absl::OkStatus();
    case Op::kCancelWait:
      CancelWait(id, c);
      AppendStoreU8(out, kStoreWaitCanceled);
      return absl::OkStatus();
    case Op::kNumKeys:
      AppendStoreI64(out, static_cast<int64_t>(data_.size()));
      return absl::OkStatus();
    case Op::kQueuePop: {
      auto it = queues_.find(q.keys[0]);
      const size_t n = it == queues_.end() ? 0 : it->second.size();
      AppendStoreI64(out, static_cast<int64_t>(n));
      if (n > 0) {
        AppendStoreBytes(out, it->second.front());
        stored_bytes_ -= q.keys[0].size() + it->second.front().size();
        it->second.pop_front();
        if (it->second.empty()) queues_.erase(it);
      }
      return absl::OkStatus();
    }
    case Op::kQueueLen: {
      auto it = queues_.find(q.keys[0]);
      AppendStoreI64(out, it == queues_.end() ? 0 : static_cast<int64_t>(it->second.size()));
      return absl::OkStatus();
    }
    case Op::kListKeys:
      AppendStoreI64(out, static_cast<int64_t>(data_.size()));
      for (const auto& [key, value] : data_) AppendStoreBytes(out, key);
      return absl::OkStatus();
    default:  // kWatchKey
      return absl::UnimplementedError(
          "WATCH_KEY (PyTorch 1.x's watch_key callbacks) is not served by this store");
  }
}

}  // namespace dlaunch
