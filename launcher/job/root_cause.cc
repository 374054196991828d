#include "launcher/job/root_cause.h"

#include <algorithm>
#include <cstddef>
#include <tuple>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"

namespace dlaunch {
namespace {

// Substrings (lower case) that Gloo, NCCL, c10d and the Python runtime print when a peer went
// away or a collective could not complete because of one.
constexpr const char* kPeerFailureMarks[] = {
    "connection reset by peer",
    "connection closed by peer",
    "connection refused",
    "broken pipe",
    "socket timeout",
    "application timeout caused pair closure",
    "connectfullmesh failed",
    "recvbytes",
    "sendbytes",
    "nccl communicator was aborted",
    "ncclremoteerror",
    "watchdog caught collective operation timeout",
    "some nccl operations have failed or timed out",
    "distbackenderror",
    "timed out waiting for peer",
    "gloo/transport",
};

// 0: a failure of its own; 1: a reaction to a peer.
int Kind(const Failure& f) {
  if (f.waits_on_peers) return 1;
  if (f.cls != FailureClass::kWorkerCrash) return 0;
  if (f.signal > 0 && f.signal != 15) return 0;   // SIGTERM is how a stop ends a rank
  return LooksLikePeerFailure(f.log_tail) ? 1 : 0;
}

}  // namespace

bool LooksLikePeerFailure(const std::vector<std::string>& log_tail) {
  for (const std::string& line : log_tail) {
    std::string lower = absl::AsciiStrToLower(line);
    for (const char* mark : kPeerFailureMarks) {
      if (absl::StrContains(lower, mark)) return true;
    }
  }
  return false;
}

RootCauseVerdict PickRootCause(const std::vector<Failure>& failures) {
  RootCauseVerdict v;
  if (failures.empty()) return v;
  auto key = [](const Failure& f) {
    return std::make_tuple(f.after_stop ? 1 : 0, Kind(f), f.detected_at_s,
                           f.global_rank < 0 ? -1 : f.global_rank, f.node_rank);
  };
  size_t best = 0;
  for (size_t i = 1; i < failures.size(); ++i) {
    if (key(failures[i]) < key(failures[best])) best = i;
  }
  v.root = failures[best];
  for (size_t i = 0; i < failures.size(); ++i) {
    if (i != best) v.consequences.push_back(failures[i]);
  }
  return v;
}

}  // namespace dlaunch
