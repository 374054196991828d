// Node topology for placement: cores with their hardware threads, NUMA domains and the NUMA
// domain of each GPU, read with hwloc from this machine or from an hwloc XML file (tests).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/placement/gpu_discovery.h"

namespace dlaunch {

struct TopologyCore {
  int numa = 0;          // index into NodeTopology::numa_os_index
  std::vector<int> pus;  // OS CPU ids of its hardware threads, ascending
};

struct PciDeviceLocality {
  std::string bus_id;  // "0000:07:00.0", lower case
  int numa = -1;       // index into NodeTopology::numa_os_index; -1 when hwloc cannot tell
};

struct NodeTopology {
  std::vector<TopologyCore> cores;       // hwloc's logical order (follows packages and domains)
  std::vector<int> numa_os_index;        // the kernel's number of each NUMA domain
  std::vector<PciDeviceLocality> gpus;   // display/3D-class PCI devices, in PCI bus order
  std::vector<int> allowed_cpus;         // what the allocation grants (cgroup cpuset), ascending
};

// Reads this machine (PCI devices only `with_gpus`). allowed_cpus is hwloc's allowed cpuset: the cgroup/cpuset of the
// allocation, which a launcher's sched_setaffinity binding does not narrow.
absl::StatusOr<NodeTopology> LoadThisNodeTopology(bool with_gpus = true);

// Reads an hwloc XML export (`lstopo --of xml`); allowed_cpus is the file's allowed cpuset.
absl::StatusOr<NodeTopology> LoadTopologyXml(const std::string& path);

// The NUMA domain of the PCI device with this bus id ("00000000:07:00.0" as NVML writes it or
// "0000:07:00.0" as hwloc does); nullopt when the topology does not know the device.
std::optional<int> GpuNumaDomain(const NodeTopology& topo, const std::string& bus_id);

// "0000:07:00.0" for any spelling of a PCI bus id; nullopt when it does not parse.
std::optional<std::string> NormalizePciBusId(const std::string& bus_id);

// Per visible GPU, its NUMA domain in topo (-1 when unknown), looked up through bus_id_of
// (NVML's bus id for an entry of GpuInventory::visible).
using GpuBusIdFn = std::function<std::optional<std::string>(const std::string& visible_entry)>;
std::vector<int> GpuNumaDomains(const NodeTopology& topo, const GpuInventory& gpus,
                                const GpuBusIdFn& bus_id_of);

// The CPUs to plan in. The allocation's set (cgroup cpuset) is the outer bound; the agent's own
// affinity narrows it, unless that affinity is a launcher's per-rank binding (started_as_mpi_rank:
// Open MPI's mpirun binds a lone process to one core by default), which is not an allocation.
std::vector<int> PlanningCpus(const std::vector<int>& allocation,
                              const std::vector<int>& own_affinity, bool started_as_mpi_rank);

// True when an MPI-style launcher (Open MPI, MPICH hydra, Cray PALS, Slurm srun) started this
// process as one of its ranks: their variables are set.
bool StartedAsMpiRank(const EnvLookup& getenv);

}  // namespace dlaunch
