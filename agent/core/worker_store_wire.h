// The c10d TCPStore wire format, both generations: one query is a type byte and its fields, in
// the host's byte order as PyTorch writes them (a string or value is a uint64 length and its
// bytes; CHECK, WAIT, MULTI_GET and MULTI_SET first give a uint64 count). Only the type numbers
// differ: PyTorch 1.13 counts from SET = 0 (WATCH_KEY = 7, DELETE_KEY = 8), PyTorch 2.x from
// VALIDATE = 0 (DELETE_KEY = 8, ... LIST_KEYS = 17). Pure functions, no state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "agent/core/worker_store_engine.h"

namespace dlaunch {

struct ParsedQuery {
  enum class State { kDone, kNeedMore, kBad };
  State state = State::kNeedMore;
  size_t consumed = 0;  // kDone: the query's length in bytes
  size_t need = 0;      // kNeedMore: no parse can succeed before input holds this many bytes
  std::string error;    // kBad: what is wrong, for the connection's close message
  WorkerStoreEngine::Query query;
};

// Reads one query from the start of `input` in `dialect` (kTorch1 or kTorch2).
ParsedQuery ParseStoreQuery(std::string_view input, StoreDialect dialect,
                            const WorkerStoreLimits& limits);

// Reply encoding, as the clients read it.
void AppendStoreU8(std::string* out, uint8_t v);
void AppendStoreU32(std::string* out, uint32_t v);
void AppendStoreI64(std::string* out, int64_t v);
void AppendStoreBytes(std::string* out, std::string_view bytes);  // uint64 length, bytes

// Reply codes (c10d's CheckResponseType and WaitResponseType).
inline constexpr uint8_t kStoreReady = 0;
inline constexpr uint8_t kStoreNotReady = 1;
inline constexpr uint8_t kStoreStopWaiting = 0;
inline constexpr uint8_t kStoreWaitCanceled = 1;

}  // namespace dlaunch
