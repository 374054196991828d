// CPU placement of a node's local ranks: which GPUs and which whole cores each rank gets, from
// the node's topology. Pure (no system calls), so Polaris- and DGX-shaped nodes are unit-tested
// from hwloc XML on any machine. The rules are in docs/placement.md.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/placement/node_topology.h"

namespace dlaunch {

enum class CpuBinding {
  kNone,   // workers inherit the agent's CPUs; nothing is pinned
  kCores,  // each rank gets its own whole cores (all their hardware threads)
};

// One local rank's entry of a user-given map.
struct ExplicitRankPlacement {
  std::vector<int> cpus;  // OS CPU ids (as taskset and Cpus_allowed_list number them)
  int gpu = -1;           // position in the visible GPU list; -1 = planned as usual
};

struct PlacementRequest {
  std::string host;        // named in errors: the node the map does not fit
  int nproc = 1;
  int gpus_per_proc = 0;   // 0: rank i gets GPU i % count; k: k GPUs per rank
  std::vector<int> gpu_numa;  // per visible GPU: NUMA domain index in the topology, -1 unknown
  // Rank r takes the r-th GPU in NUMA order instead of GPU r. Right when each rank sees only its
  // own GPU (isolation); otherwise LOCAL_RANK indexes the GPU list and the cores follow the GPU.
  bool gpus_by_locality = false;
  CpuBinding binding = CpuBinding::kCores;
  std::vector<ExplicitRankPlacement> explicit_map;  // empty = computed; ignored with kNone
};

struct RankPlacement {
  std::vector<int> gpu_indices;  // positions in the visible GPU list
  std::vector<int> cpus;         // OS CPU ids, ascending; empty = inherit the agent's
  int cores = 0;                 // whole cores among cpus
  int numa = -1;                 // the NUMA domain (index) of all its cores; -1 if several
  bool shared = false;           // shares cores with another rank (more ranks than cores)
};

// Places req.nproc ranks on the cores of topo whose hardware threads are in allowed_cpus.
//  - A rank with a GPU of known locality gets cores of that GPU's NUMA domain only; the ranks
//    of one domain split its cores into contiguous near-equal shares.
//  - Otherwise (no GPUs, or a GPU of unknown locality) ranks spread evenly over the NUMA domains
//    and then over the cores of each.
//  - A domain with fewer cores than ranks gives each rank one core, round-robin: shared.
// InvalidArgument: nproc < 1, gpus_per_proc < 0, an explicit map with fewer entries than ranks,
// an empty entry, a CPU in two entries. FailedPrecondition: more GPUs asked for than the node
// has, or a map naming CPUs or GPUs the node lacks or the allocation does not grant; the message
// names req.host and what it has.
absl::StatusOr<std::vector<RankPlacement>> PlaceRanks(const NodeTopology& topo,
                                                      const std::vector<int>& allowed_cpus,
                                                      const PlacementRequest& req);

// A topology of one NUMA domain where every CPU is its own core: placement without hwloc.
NodeTopology FlatTopology(const std::vector<int>& cpus);

// "0-3,8,10-11": compact CPU lists for logs and errors.
std::string CpuRanges(const std::vector<int>& cpus);

}  // namespace dlaunch
