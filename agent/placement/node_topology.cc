#include "agent/placement/node_topology.h"

#include <hwloc.h>

#include <algorithm>
#include <cstdlib>
#include <cstdio>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace dlaunch {
namespace {

struct TopologyDeleter {
  void operator()(hwloc_topology_t t) const { hwloc_topology_destroy(t); }
};
using TopologyPtr = std::unique_ptr<hwloc_topology, TopologyDeleter>;

std::vector<int> Ids(hwloc_const_bitmap_t set) {
  std::vector<int> ids;
  if (set == nullptr) return ids;
  unsigned id;
  hwloc_bitmap_foreach_begin(id, set) { ids.push_back(static_cast<int>(id)); }
  hwloc_bitmap_foreach_end();
  return ids;
}

// Index in numa_os_index of the NUMA domain in nodeset; -1 when there is none. A nodeset of
// several domains means "local to all of them" (a PCI device under the whole machine): -1, unless
// first_of_several (a core over DDR plus HBM, where the first is the ordinary memory).
int NumaIndex(const std::vector<int>& numa_os_index, hwloc_const_bitmap_t nodeset,
              bool first_of_several) {
  if (numa_os_index.size() == 1) return 0;
  std::vector<int> nodes = Ids(nodeset);
  if (nodes.empty() || (nodes.size() > 1 && !first_of_several)) return -1;
  auto it = std::find(numa_os_index.begin(), numa_os_index.end(), nodes.front());
  return it == numa_os_index.end() ? -1 : static_cast<int>(it - numa_os_index.begin());
}

NodeTopology Describe(hwloc_topology_t topo) {
  NodeTopology out;
  for (hwloc_obj_t n = nullptr; (n = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, n));) {
    out.numa_os_index.push_back(static_cast<int>(n->os_index));
  }
  // Some platforms (certain VMs, older kernels) expose no Core objects: each PU is then a core.
  const hwloc_obj_type_t core_type =
      hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE) > 0 ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
  for (hwloc_obj_t c = nullptr; (c = hwloc_get_next_obj_by_type(topo, core_type, c));) {
    TopologyCore core;
    core.pus = Ids(c->cpuset);
    // A core hwloc attaches to no NUMA node (not seen on Linux) counts as the first domain.
    core.numa = std::max(0, NumaIndex(out.numa_os_index, c->nodeset, true));
    if (!core.pus.empty()) out.cores.push_back(std::move(core));
  }
  for (hwloc_obj_t d = nullptr; (d = hwloc_get_next_pcidev(topo, d));) {
    if ((d->attr->pcidev.class_id >> 8) != 0x03) continue;  // display controllers only
    PciDeviceLocality gpu;
    gpu.bus_id = absl::StrFormat("%04x:%02x:%02x.%x", d->attr->pcidev.domain, d->attr->pcidev.bus,
                                 d->attr->pcidev.dev, d->attr->pcidev.func);
    hwloc_obj_t parent = hwloc_get_non_io_ancestor_obj(topo, d);
    if (parent != nullptr) gpu.numa = NumaIndex(out.numa_os_index, parent->nodeset, false);
    out.gpus.push_back(std::move(gpu));
  }
  // hwloc lists devices in tree order (by locality); NVML and CUDA count in bus order.
  std::sort(out.gpus.begin(), out.gpus.end(),
            [](const auto& a, const auto& b) { return a.bus_id < b.bus_id; });
  out.allowed_cpus = Ids(hwloc_topology_get_allowed_cpuset(topo));
  return out;
}

// Loads without disallowed CPUs, caches or misc objects (placement needs cores, PUs and NUMA
// domains), and with PCI devices (GPU locality) only when asked: discovering I/O scans sysfs and
// is most of hwloc's load time, which every agent pays at start.
absl::StatusOr<NodeTopology> Load(const std::string& xml_path, bool with_io) {
  // Without I/O no plugin is needed (PCI, OpenCL, OpenGL and libxml2 ones, with libX11 and
  // libOpenCL behind them); hwloc dlopens every plugin it finds at init, which costs more than
  // reading the CPUs, so the plugin path points nowhere for that one init. A user's own
  // HWLOC_PLUGINS_PATH is left alone.
  const bool hide_plugins = !with_io && std::getenv("HWLOC_PLUGINS_PATH") == nullptr;
  if (hide_plugins) setenv("HWLOC_PLUGINS_PATH", "/nonexistent/dlaunch-no-hwloc-plugins", 1);
  hwloc_topology_t raw = nullptr;
  const int init = hwloc_topology_init(&raw);
  if (hide_plugins) unsetenv("HWLOC_PLUGINS_PATH");
  if (init != 0) return absl::InternalError("hwloc_topology_init failed");
  TopologyPtr topo(raw);
  // Should this fail, the topology merely lacks PCI devices: GPUs then have unknown locality and
  // ranks are spread, which the plan's log line shows (no NUMA per rank).
  (void)hwloc_topology_set_io_types_filter(
      raw, with_io ? HWLOC_TYPE_FILTER_KEEP_IMPORTANT : HWLOC_TYPE_FILTER_KEEP_NONE);
  (void)hwloc_topology_set_cache_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_NONE);
  (void)hwloc_topology_set_icache_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_NONE);
  (void)hwloc_topology_set_type_filter(raw, HWLOC_OBJ_MISC, HWLOC_TYPE_FILTER_KEEP_NONE);
  // Linux's sysfs says all placement needs; the x86 backend would also bind this thread to every
  // PU in turn to run CPUID on it, which costs more than the rest of the load.
  (void)hwloc_topology_set_components(raw, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "x86");
  if (!xml_path.empty() && hwloc_topology_set_xml(raw, xml_path.c_str()) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("cannot read hwloc XML '", xml_path, "'"));
  }
  if (hwloc_topology_load(raw) != 0) {
    return absl::InternalError(
        absl::StrCat("hwloc could not read the topology",
                     xml_path.empty() ? std::string() : absl::StrCat(" from '", xml_path, "'")));
  }
  NodeTopology out = Describe(raw);
  if (out.cores.empty()) return absl::InternalError("hwloc found no CPU cores");
  return out;
}

}  // namespace

absl::StatusOr<NodeTopology> LoadThisNodeTopology(bool with_gpus) { return Load("", with_gpus); }

absl::StatusOr<NodeTopology> LoadTopologyXml(const std::string& path) {
  if (path.empty()) return absl::InvalidArgumentError("empty hwloc XML path");
  return Load(path, true);
}

std::optional<std::string> NormalizePciBusId(const std::string& bus_id) {
  unsigned domain = 0, bus = 0, dev = 0, func = 0;
  int used = 0;
  // Hex digits and separators only: sscanf's %x would also take a "0x" prefix.
  if (bus_id.find_first_not_of("0123456789abcdefABCDEF:.") != std::string::npos ||
      std::sscanf(bus_id.c_str(), "%x:%x:%x.%x%n", &domain, &bus, &dev, &func, &used) != 4 ||
      used != static_cast<int>(bus_id.size())) {
    return std::nullopt;
  }
  return absl::StrFormat("%04x:%02x:%02x.%x", domain, bus, dev, func);
}

std::optional<int> GpuNumaDomain(const NodeTopology& topo, const std::string& bus_id) {
  std::optional<std::string> want = NormalizePciBusId(bus_id);
  if (!want) return std::nullopt;
  for (const PciDeviceLocality& d : topo.gpus) {
    if (d.bus_id == *want && d.numa >= 0) return d.numa;
  }
  return std::nullopt;
}

std::vector<int> GpuNumaDomains(const NodeTopology& topo, const GpuInventory& gpus,
                                const GpuBusIdFn& bus_id_of) {
  std::vector<int> numa;
  for (const std::string& entry : gpus.visible) {
    std::optional<std::string> bus = bus_id_of ? bus_id_of(entry) : std::nullopt;
    std::optional<int> n = bus ? GpuNumaDomain(topo, *bus) : std::nullopt;
    numa.push_back(n.value_or(-1));
  }
  return numa;
}

std::vector<int> PlanningCpus(const std::vector<int>& allocation,
                              const std::vector<int>& own_affinity, bool started_as_mpi_rank) {
  if (own_affinity.empty() || started_as_mpi_rank) return allocation;
  std::vector<int> out;
  std::set_intersection(allocation.begin(), allocation.end(), own_affinity.begin(),
                        own_affinity.end(), std::back_inserter(out));
  // An affinity outside what hwloc calls allowed (hwloc could not read the cgroup): trust the
  // kernel, which enforces the mask we have.
  return out.empty() ? own_affinity : out;
}

bool StartedAsMpiRank(const EnvLookup& getenv) {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PALS_RANKID",
                          "SLURM_STEP_ID"}) {
    if (getenv(var)) return true;
  }
  return false;
}

}  // namespace dlaunch
