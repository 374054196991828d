#include "agent/core/worker_store_wire.h"

#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"

namespace dlaunch {
namespace {

using Op = WorkerStoreEngine::Op;

// Wire numbers to queries, by dialect: PyTorch 1.13's QueryType, and 2.x's (2.11 checked).
constexpr Op kTorch1Ops[] = {Op::kSet,  Op::kCompareSet, Op::kGet,      Op::kAdd,   Op::kCheck,
                             Op::kWait, Op::kNumKeys,    Op::kWatchKey, Op::kDelete};
constexpr Op kTorch2Ops[] = {Op::kValidate,  Op::kSet,        Op::kCompareSet, Op::kGet,
                             Op::kAdd,       Op::kCheck,      Op::kWait,       Op::kNumKeys,
                             Op::kDelete,    Op::kAppend,     Op::kMultiGet,   Op::kMultiSet,
                             Op::kCancelWait, Op::kPing,      Op::kQueuePush,  Op::kQueuePop,
                             Op::kQueueLen,  Op::kListKeys};

// Reads fields from the start of one query. A false return is either "too short" (need() says
// how many bytes the input must hold) or a bound broken (error() says which).
class Reader {
 public:
  Reader(std::string_view in, const WorkerStoreLimits& limits) : in_(in), limits_(limits) {}

  bool Fixed(void* out, size_t n) {
    if (!Has(n)) return false;
    std::memcpy(out, in_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  bool Bytes(size_t limit, const char* what, std::string* out) {
    uint64_t len = 0;
    if (!Fixed(&len, sizeof len)) return false;
    if (len > limit) {
      error_ = absl::StrCat("a ", what, " of ", len, " bytes is more than the ", limit,
                            " bytes allowed");
      return false;
    }
    if (!Has(len)) return false;
    out->assign(in_.data() + pos_, len);
    pos_ += len;
    return true;
  }
  bool Key(std::string* out) { return Bytes(limits_.max_key_bytes, "key", out); }
  bool Value(std::string* out) { return Bytes(limits_.max_value_bytes, "value", out); }
  bool Count(uint64_t* n) {
    if (!Fixed(n, sizeof *n)) return false;
    if (*n > limits_.max_keys_per_query) {
      error_ = absl::StrCat("a query naming ", *n, " keys is more than the ",
                            limits_.max_keys_per_query, " allowed");
      return false;
    }
    return true;
  }
  bool Keys(std::vector<std::string>* keys) {
    uint64_t n = 0;
    if (!Count(&n)) return false;
    keys->resize(n);
    for (std::string& k : *keys) {
      if (!Key(&k)) return false;
    }
    return true;
  }

  size_t pos() const { return pos_; }
  size_t need() const { return need_; }
  const std::string& error() const { return error_; }

 private:
  bool Has(uint64_t n) {
    if (in_.size() - pos_ >= n) return true;
    if (pos_ > limits_.max_query_bytes || n > limits_.max_query_bytes - pos_) {
      error_ = absl::StrCat("a query of more than ", limits_.max_query_bytes,
                            " bytes (the most one query may hold)");
    } else {
      need_ = pos_ + static_cast<size_t>(n);
    }
    return false;
  }

  std::string_view in_;
  const WorkerStoreLimits& limits_;
  size_t pos_ = 0;
  size_t need_ = 0;
  std::string error_;
};

// The fields of `q.op`, read into q.
bool ReadFields(Reader& r, WorkerStoreEngine::Query& q) {
  switch (q.op) {
    case Op::kValidate:
    case Op::kPing:
      return r.Fixed(&q.word, sizeof q.word);
    case Op::kSet:
    case Op::kAppend:
    case Op::kQueuePush:
      q.keys.resize(1);
      q.values.resize(1);
      return r.Key(&q.keys[0]) && r.Value(&q.values[0]);
    case Op::kCompareSet:
      q.keys.resize(1);
      q.values.resize(2);
      return r.Key(&q.keys[0]) && r.Value(&q.values[0]) && r.Value(&q.values[1]);
    case Op::kGet:
    case Op::kDelete:
    case Op::kQueuePop:
    case Op::kQueueLen:
    case Op::kWatchKey:
      q.keys.resize(1);
      return r.Key(&q.keys[0]);
    case Op::kAdd:
      q.keys.resize(1);
      return r.Key(&q.keys[0]) && r.Fixed(&q.number, sizeof q.number);
    case Op::kCheck:
    case Op::kWait:
    case Op::kMultiGet:
      return r.Keys(&q.keys);
    case Op::kMultiSet: {
      uint64_t n = 0;
      if (!r.Count(&n)) return false;
      q.keys.resize(n);
      q.values.resize(n);
      for (uint64_t i = 0; i < n; ++i) {
        if (!r.Key(&q.keys[i]) || !r.Value(&q.values[i])) return false;
      }
      return true;
    }
    case Op::kNumKeys:
    case Op::kCancelWait:
    case Op::kListKeys:
      return true;
  }
  return true;
}

}  // namespace

ParsedQuery ParseStoreQuery(std::string_view input, StoreDialect dialect,
                            const WorkerStoreLimits& limits) {
  ParsedQuery out;
  Reader r(input, limits);
  uint8_t type = 0;
  if (!r.Fixed(&type, 1)) {
    out.need = 1;
    return out;
  }
  const bool v2 = dialect == StoreDialect::kTorch2;
  const size_t known = v2 ? std::size(kTorch2Ops) : std::size(kTorch1Ops);
  if (type >= known) {
    out.state = ParsedQuery::State::kBad;
    out.error = absl::StrCat("query type ", static_cast<int>(type), " is not one of PyTorch ",
                             v2 ? "2.x's" : "1.13's", " (0..", known - 1, ")");
    return out;
  }
  out.query.op = v2 ? kTorch2Ops[type] : kTorch1Ops[type];
  if (ReadFields(r, out.query)) {
    out.state = ParsedQuery::State::kDone;
    out.consumed = r.pos();
  } else if (!r.error().empty()) {
    out.state = ParsedQuery::State::kBad;
    out.error = absl::StrCat(StoreOpName(out.query.op), ": ", r.error());
  } else {
    out.need = r.need();
  }
  return out;
}

void AppendStoreU8(std::string* out, uint8_t v) { out->push_back(static_cast<char>(v)); }

void AppendStoreU32(std::string* out, uint32_t v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof v);
}

void AppendStoreI64(std::string* out, int64_t v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof v);
}

void AppendStoreBytes(std::string* out, std::string_view bytes) {
  const uint64_t len = bytes.size();
  out->append(reinterpret_cast<const char*>(&len), sizeof len);
  out->append(bytes.data(), bytes.size());
}

}  // namespace dlaunch
