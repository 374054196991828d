#include "agent/placement/local_rank_plan.h"

#include <sched.h>

#include <algorithm>
#include <cerrno>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/environment.h"
#include "common/host_identity.h"

namespace dlaunch {
namespace {

// The GPU-count checks, with the inventory's source in the message (PlaceRanks cannot know it).
absl::Status CheckGpuRequest(int nproc, const GpuInventory& gpus, int gpus_per_proc) {
  if (nproc < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("nproc_per_node must be at least 1, got ", nproc));
  }
  if (gpus_per_proc < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("gpus_per_proc must be 0 (share round-robin) or positive, got ",
                     gpus_per_proc));
  }
  const int ngpu = gpus.count();
  if (gpus_per_proc > 0 && static_cast<long long>(gpus_per_proc) * nproc > ngpu) {
    return absl::FailedPreconditionError(absl::StrCat(
        "gpus_per_proc=", gpus_per_proc, " x nproc_per_node=", nproc, " needs ",
        static_cast<long long>(gpus_per_proc) * nproc, " GPUs but this node sees ", ngpu,
        " (from ", gpus.source.empty() ? "none" : gpus.source,
        ngpu > 0 ? absl::StrCat(": ", absl::StrJoin(gpus.visible, ",")) : "", ")"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<RankSlot>> PlanLocalRanks(const NodeTopology& topo,
                                                     const std::vector<int>& planning_cpus,
                                                     const GpuInventory& gpus,
                                                     PlacementRequest req) {
  if (absl::Status st = CheckGpuRequest(req.nproc, gpus, req.gpus_per_proc); !st.ok()) return st;
  req.gpu_numa.resize(gpus.visible.size(), -1);
  auto placed = PlaceRanks(topo, planning_cpus, req);
  if (!placed.ok()) return placed.status();
  std::vector<RankSlot> plan(req.nproc);
  for (int r = 0; r < req.nproc; ++r) {
    RankSlot& s = plan[r];
    RankPlacement& p = (*placed)[r];
    s.local_rank = r;
    s.gpu_indices = std::move(p.gpu_indices);
    for (int idx : s.gpu_indices) s.gpus.push_back(gpus.visible[idx]);
    s.cpus = std::move(p.cpus);
    s.cores = p.cores;
    if (p.numa >= 0 && p.numa < static_cast<int>(topo.numa_os_index.size())) {
      s.numa_node = topo.numa_os_index[p.numa];
    }
    s.shares_cores = p.shared;
  }
  return plan;
}

absl::StatusOr<std::vector<RankSlot>> PlanLocalRanks(int nproc, const GpuInventory& gpus,
                                                     const std::vector<int>& allowed_cpus,
                                                     int gpus_per_proc) {
  PlacementRequest req;
  req.nproc = nproc;
  req.gpus_per_proc = gpus_per_proc;
  absl::StatusOr<std::vector<RankSlot>> plan =
      PlanLocalRanks(FlatTopology(allowed_cpus), allowed_cpus, gpus, req);
  // A flat topology knows no NUMA domains or cores: only the CPU shares mean anything.
  if (plan.ok()) {
    for (RankSlot& s : *plan) s.numa_node = -1;
  }
  return plan;
}

absl::StatusOr<std::vector<RankSlot>> PlanThisNode(const GpuInventory& gpus, PlacementRequest req,
                                                   std::string* note) {
  if (req.host.empty()) req.host = LocalHostName();  // errors name the node
  const std::vector<int> own = AllowedCpus();
  absl::StatusOr<NodeTopology> topo = LoadThisNodeTopology(/*with_gpus=*/gpus.count() > 0);
  if (!topo.ok()) {
    if (note != nullptr) {
      *note = absl::StrCat("placement without topology (", topo.status().message(),
                           "): CPUs ", CpuRanges(own), " as one domain");
    }
    return PlanLocalRanks(FlatTopology(own), own, gpus, std::move(req));
  }
  const bool mpi_rank = StartedAsMpiRank(ProcessEnvironment());
  const std::vector<int> cpus = PlanningCpus(topo->allowed_cpus, own, mpi_rank);
  if (note != nullptr) {
    *note = absl::StrCat("placement in CPUs ", CpuRanges(cpus), " (allocation ",
                         CpuRanges(topo->allowed_cpus), ", agent affinity ", CpuRanges(own),
                         mpi_rank && own != cpus ? ": a launcher's binding, widened" : "", "), ",
                         topo->numa_os_index.size(), " NUMA domain(s)");
  }
  req.gpu_numa = GpuNumaDomains(*topo, gpus, NvmlPciBusId);
  return PlanLocalRanks(*topo, cpus, gpus, std::move(req));
}

int DefaultProcsPerNode(const GpuInventory& gpus) {
  return gpus.count() > 0 ? gpus.count() : 1;
}

std::vector<int> AllowedCpus() {
  // CPU_ALLOC sizes beyond CPU_SETSIZE (1024) matter on large nodes; grow until it fits.
  for (int ncpus = CPU_SETSIZE; ncpus <= (1 << 16); ncpus *= 2) {
    cpu_set_t* set = CPU_ALLOC(ncpus);
    if (set == nullptr) return {};
    size_t size = CPU_ALLOC_SIZE(ncpus);
    CPU_ZERO_S(size, set);
    if (sched_getaffinity(0, size, set) == 0) {
      std::vector<int> cpus;
      for (int c = 0; c < ncpus; ++c) {
        if (CPU_ISSET_S(c, size, set)) cpus.push_back(c);
      }
      CPU_FREE(set);
      return cpus;
    }
    CPU_FREE(set);
    if (errno != EINVAL) return {};
  }
  return {};
}


std::string DescribeRankSlot(const RankSlot& slot) {
  std::string gpus = slot.gpus.empty()
                         ? std::string("none")
                         : absl::StrCat(absl::StrJoin(slot.gpus, ","), " (index ",
                                        absl::StrJoin(slot.gpu_indices, ","), ")");
  std::string cpus = slot.cpus.empty() ? std::string("any") : CpuRanges(slot.cpus);
  if (slot.cores > 0) {
    absl::StrAppend(&cpus, " (", slot.cores, slot.cores == 1 ? " core" : " cores",
                    slot.numa_node >= 0 ? absl::StrCat(", NUMA ", slot.numa_node) : "",
                    slot.shares_cores ? ", shared with other ranks" : "", ")");
  }
  return absl::StrCat("local_rank ", slot.local_rank, ": gpus ", gpus, ", cpus ", cpus);
}

}  // namespace dlaunch
