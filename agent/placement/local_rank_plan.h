// Local-rank plan: which GPUs and CPU cores each worker process on this node gets.
// Pure but for PlanThisNode and AllowedCpus: inventory, topology and CPUs are passed in.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/placement/cpu_placement.h"
#include "agent/placement/gpu_discovery.h"
#include "agent/placement/node_topology.h"

namespace dlaunch {

struct RankSlot {
  int local_rank = 0;
  std::vector<std::string> gpus;  // entries of GpuInventory::visible
  std::vector<int> gpu_indices;   // positions in GpuInventory::visible (what LOCAL_RANK indexes)
  std::vector<int> cpus;          // CPU ids for this rank's affinity; empty = inherit
  int cores = 0;                  // whole cores among cpus (OMP_NUM_THREADS default)
  int numa_node = -1;             // the kernel's number of the NUMA node of all its cores
  bool shares_cores = false;      // more ranks than cores: shares its core with others
};

// Plans nproc local ranks without a topology: every allowed CPU counts as a core of one domain.
//  gpus_per_proc == 0: rank i gets visible GPU i % count (GPUs are shared when there are
//    more ranks than GPUs; no GPU at all on a CPU-only node).
//  gpus_per_proc == k > 0: rank i gets GPUs [i*k, (i+1)*k); FailedPrecondition when
//    k * nproc exceeds the visible GPUs.
// CPU cores (in the order given) are split into contiguous, near-equal shares (the first
// cores % nproc ranks get one more); with fewer cores than ranks, ranks share them
// round-robin. InvalidArgument for nproc < 1 or gpus_per_proc < 0.
absl::StatusOr<std::vector<RankSlot>> PlanLocalRanks(int nproc, const GpuInventory& gpus,
                                                     const std::vector<int>& allowed_cpus,
                                                     int gpus_per_proc);

// Plans on a node's topology (PlaceRanks), within planning_cpus, naming the GPUs. The GPU count
// errors are the ones above; req.gpu_numa must have one entry per visible GPU (-1 = unknown).
absl::StatusOr<std::vector<RankSlot>> PlanLocalRanks(const NodeTopology& topo,
                                                     const std::vector<int>& planning_cpus,
                                                     const GpuInventory& gpus,
                                                     PlacementRequest req);

// The plan for this machine: hwloc topology, the CPUs the allocation grants (PlanningCpus),
// each GPU's NUMA domain from its NVML bus id. Fills req.gpu_numa, and req.host when empty
// (LocalHostName). When hwloc cannot read the node, plans on the agent's affinity as one flat
// domain and says so in *note.
absl::StatusOr<std::vector<RankSlot>> PlanThisNode(const GpuInventory& gpus, PlacementRequest req,
                                                   std::string* note);

// nproc_per_node when the spec leaves it 0: one per visible GPU, else 1.
int DefaultProcsPerNode(const GpuInventory& gpus);

// CPUs this process may run on (sched_getaffinity), ascending; empty if the call fails.
std::vector<int> AllowedCpus();


// One log line per rank, e.g. "local_rank 1: gpus 1 (index 1), cpus 8-15,72-79 (8 cores, NUMA 1)".
std::string DescribeRankSlot(const RankSlot& slot);

}  // namespace dlaunch
