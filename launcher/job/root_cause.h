// Which failure caused the others. When one rank dies, its peers fail soon after inside Gloo or
// NCCL ("Connection reset by peer", a collective timeout), and when the launcher stops the job
// every rank ends; naming any of those as the cause sends the user to the wrong node. Pure: no
// clocks, no I/O.
#pragma once

#include <string>
#include <vector>

#include "launcher/job/failure.h"

namespace dlaunch {

struct RootCauseVerdict {
  Failure root;
  std::vector<Failure> consequences;   // every other failure, in the order they were seen
};

// True when a log tail reads like the reaction to a peer's death rather than a fault of its
// own: a broken connection to a peer, an aborted communicator, a collective timeout.
bool LooksLikePeerFailure(const std::vector<std::string>& log_tail);

// Picks the root cause among `failures` (at least one):
//   1. failures seen before the job was told to stop come before those seen after;
//   2. then a failure of its own (a signal such as SIGSEGV or SIGKILL, an error that is not a
//      peer's death, a lost or silent node, a stall) comes before a rank that died of a peer
//      or a stalled rank whose stacks show it waiting on its peers in a collective;
//   3. then the earliest detected; ties go to the lower rank.
RootCauseVerdict PickRootCause(const std::vector<Failure>& failures);

}  // namespace dlaunch
