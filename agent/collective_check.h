// The agent's side of the collective check before round 0 (docs/stragglers.md): after its own
// checks the node asks the launcher for its place in the check's ring, then measures, with plain
// TCP and a loop of its own (no LibTorch needed, so Python-only sites have it too):
//   link      it sends plan.bytes to each of its two ring neighbours at once, each timed until
//             the neighbour acknowledged the last byte, while it receives theirs; three times,
//             the best kept;
//   all-reduce a ring all-reduce (reduce-scatter, then all-gather) of plan.bytes of floats
//             within its group of at most plan.group consecutive nodes, its sums verified;
//   compute   a float matrix multiply on one core, the best of three windows of a third of
//             plan.compute_ms each, after 100 ms unmeasured.
// Cost per node: O(1) connections and 2 x bytes sent to neighbours, plus 2 x bytes in the
// group's ring: never all-to-all. It reports the figures and returns the launcher's verdicts
// (`link` and `compute` checks), which the node joins with.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dlaunch/control.pb.h"

namespace dlaunch {

class ControlClient;
struct CollectiveEngine;

struct CollectiveMember {
  std::string agent_id;
  std::string host;
  std::string addr;  // the address the node's check listens on, as peers reach it
};

// Runs the check of `plan` on this node; `own_passed`: the node passed its own checks (else it
// only tells the launcher so, and is not measured). `engine`: what this node can measure its
// links with (collective_engine.h); the launcher says what every node uses. Skipped checks when
// there is nothing to compare; a failed `link` when the launcher cannot be asked.
std::vector<v1::CheckResult> CollectiveCheckThisNode(ControlClient& client,
                                                     const v1::CollectivePlan& plan,
                                                     const CollectiveMember& me, bool own_passed,
                                                     const CollectiveEngine& engine);

// Float multiply-add rate (FLOP/s) of one core: the best of three thirds of `window`, after
// `warmup` unmeasured.
double MeasureFlopsPerCore(std::chrono::milliseconds window,
                           std::chrono::milliseconds warmup = std::chrono::milliseconds(100));

// The figures of node `index` of `ring` (plan.bytes each way; `listener` accepts its peers'
// connections), without the compute rate. Exposed for the tests and the bench.
v1::CollectiveFigures MeasureLinks(const std::vector<v1::CollectivePeer>& ring, int index,
                                   int listener, const v1::CollectivePlan& plan);

// A TCP socket listening on every interface at a free port (-1 on failure), and its port.
int ListenForPeers(int* port);

}  // namespace dlaunch
