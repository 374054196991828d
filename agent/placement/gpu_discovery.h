// GPU discovery: which GPUs this node's workers may use, as CUDA names them.
// CUDA_VISIBLE_DEVICES wins when set (the scheduler or user already chose); otherwise NVML is
// asked for the device count through dlopen, so the agent has no link-time CUDA dependency
// and runs unchanged on CPU-only nodes.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/environment.h"

namespace dlaunch {

struct GpuInventory {
  // Entries of CUDA_VISIBLE_DEVICES (indices or GPU-/MIG- UUIDs, as written) or NVML
  // indices as strings ("0", "1", ...). LOCAL_RANK-style indices index this list.
  std::vector<std::string> visible;
  std::string source;  // "CUDA_VISIBLE_DEVICES", "nvml" or "none"

  int count() const { return static_cast<int>(visible.size()); }
};

// Number of devices NVML reports, nullopt when NVML is unavailable or fails.
using GpuCountFn = std::function<std::optional<int>()>;

// Device count from libnvidia-ml.so.1 (dlopen'ed; nvmlInit_v2 + nvmlDeviceGetCount_v2).
std::optional<int> NvmlDeviceCount();

// PCI bus id ("00000000:07:00.0") of a GpuInventory::visible entry, from NVML: an index is
// NVML's index (CUDA's too where the GPUs are alike, or with CUDA_DEVICE_ORDER=PCI_BUS_ID), a
// "GPU-..." entry a UUID. nullopt without NVML, for MIG entries, or when NVML does not know it.
std::optional<std::string> NvmlPciBusId(const std::string& visible_entry);

// Parses a CUDA_VISIBLE_DEVICES value the way the CUDA runtime reads it: comma separated,
// whitespace trimmed, and the list ends at the first empty or negative entry ("-1" hides
// every GPU). "NoDevFiles" (what PBS/Cobalt set when no GPU was allocated) means none.
std::vector<std::string> ParseCudaVisibleDevices(const std::string& value);

// Discovers with the given environment; NVML is asked only when CUDA_VISIBLE_DEVICES is
// unset.
GpuInventory DiscoverGpus(const EnvLookup& getenv);
// Same, with an injected NVML (tests).
GpuInventory DiscoverGpus(const EnvLookup& getenv, const GpuCountFn& nvml_count);

}  // namespace dlaunch
