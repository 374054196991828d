// Bytes a client sends the agent's workers' store (WorkerStoreEngine): fed whole to one engine
// and in pieces to another, they give the same replies and the same end (open, or closed with
// the same error code); what the store holds stays within its bound.
#include <string>
#include <vector>

#include "agent/core/worker_store_engine.h"
#include "tests/fuzz/fuzz_target.h"

namespace {

struct Outcome {
  std::string replies;  // to the feeding connection and the other, in order
  absl::StatusCode code = absl::StatusCode::kOk;
};

dlaunch::WorkerStoreLimits SmallLimits() {
  dlaunch::WorkerStoreLimits l;
  l.max_key_bytes = 64;
  l.max_value_bytes = 256;
  l.max_keys_per_query = 16;
  l.max_query_bytes = 1024;
  l.max_stored_bytes = 2048;
  return l;
}

// Connection 2 waits on a key first, so that wakes are exercised; `piece` 0 = all at once.
Outcome Run(const std::string& input, size_t piece) {
  dlaunch::WorkerStoreEngine e(SmallLimits());
  e.Open(1);
  e.Open(2);
  std::vector<dlaunch::WorkerStoreEngine::Reply> replies;
  // PyTorch 1.13's WAIT for "/k" (a wake reply when the input sets it).
  const std::string wait("\x05\x01\0\0\0\0\0\0\0\x02\0\0\0\0\0\0\0/k", 19);
  (void)e.Feed(2, wait, &replies);
  Outcome out;
  for (size_t at = 0; at < input.size() && out.code == absl::StatusCode::kOk;) {
    const size_t n = piece == 0 ? input.size() : std::min(piece, input.size() - at);
    out.code = e.Feed(1, std::string_view(input).substr(at, n), &replies).code();
    at += n;
  }
  for (const auto& r : replies) out.replies += std::to_string(r.to) + ":" + r.bytes + "|";
  FUZZ_CHECK(e.stored_bytes() <= SmallLimits().max_stored_bytes, "store over its bound");
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t piece = data[0] % 7 + 1;
  const std::string input(reinterpret_cast<const char*>(data) + 1, size - 1);
  const Outcome whole = Run(input, 0);
  const Outcome pieces = Run(input, piece);
  FUZZ_CHECK(whole.code == pieces.code, "the end depends on how the bytes arrive");
  FUZZ_CHECK(whole.replies == pieces.replies, "the replies depend on how the bytes arrive");
  return 0;
}
