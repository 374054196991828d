#include "agent/placement/gpu_discovery.h"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"

namespace dlaunch {

std::optional<int> NvmlDeviceCount() {
  // Loaded at run time so the agent binary has no CUDA dependency and starts on CPU nodes.
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return std::nullopt;
  using InitFn = int (*)();
  using CountFn = int (*)(unsigned int*);
  using ShutdownFn = int (*)();
  auto init = reinterpret_cast<InitFn>(dlsym(lib, "nvmlInit_v2"));
  auto count = reinterpret_cast<CountFn>(dlsym(lib, "nvmlDeviceGetCount_v2"));
  auto shutdown = reinterpret_cast<ShutdownFn>(dlsym(lib, "nvmlShutdown"));
  std::optional<int> result;
  if (init != nullptr && count != nullptr && init() == 0) {  // 0 = NVML_SUCCESS
    unsigned int n = 0;
    if (count(&n) == 0) result = static_cast<int>(n);
    if (shutdown != nullptr) shutdown();
  }
  dlclose(lib);
  return result;
}

std::optional<std::string> NvmlPciBusId(const std::string& visible_entry) {
  if (visible_entry.rfind("MIG-", 0) == 0) return std::nullopt;
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return std::nullopt;
  // nvml.h's nvmlPciInfo_t (v3), declared here so that no CUDA header is needed to build.
  struct PciInfo {
    char bus_id_legacy[16];
    unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
    char bus_id[32];
  };
  using Device = void*;
  using InitFn = int (*)();
  using ByIndexFn = int (*)(unsigned int, Device*);
  using ByUuidFn = int (*)(const char*, Device*);
  using PciFn = int (*)(Device, PciInfo*);
  using ShutdownFn = int (*)();
  auto init = reinterpret_cast<InitFn>(dlsym(lib, "nvmlInit_v2"));
  auto by_index = reinterpret_cast<ByIndexFn>(dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"));
  auto by_uuid = reinterpret_cast<ByUuidFn>(dlsym(lib, "nvmlDeviceGetHandleByUUID"));
  auto pci = reinterpret_cast<PciFn>(dlsym(lib, "nvmlDeviceGetPciInfo_v3"));
  auto shutdown = reinterpret_cast<ShutdownFn>(dlsym(lib, "nvmlShutdown"));
  std::optional<std::string> result;
  if (init != nullptr && by_index != nullptr && by_uuid != nullptr && pci != nullptr &&
      init() == 0) {  // 0 = NVML_SUCCESS
    Device dev = nullptr;
    int found = -1;
    if (visible_entry.rfind("GPU-", 0) == 0) {
      found = by_uuid(visible_entry.c_str(), &dev);
    } else if (!visible_entry.empty() &&
               visible_entry.size() < 10 &&
               visible_entry.find_first_not_of("0123456789") == std::string::npos) {
      found = by_index(static_cast<unsigned int>(std::stoul(visible_entry)), &dev);
    }
    PciInfo info{};
    if (found == 0 && pci(dev, &info) == 0) {
      result = std::string(info.bus_id, strnlen(info.bus_id, sizeof(info.bus_id)));
    }
    if (shutdown != nullptr) shutdown();
  }
  dlclose(lib);
  return result;
}

std::vector<std::string> ParseCudaVisibleDevices(const std::string& value) {
  std::vector<std::string> out;
  std::string trimmed(absl::StripAsciiWhitespace(value));
  if (trimmed.empty() || trimmed == "NoDevFiles") return out;
  for (absl::string_view part : absl::StrSplit(trimmed, ',')) {
    std::string entry(absl::StripAsciiWhitespace(part));
    // The CUDA runtime stops at the first invalid entry; "-1" is the usual way to hide all.
    if (entry.empty() || entry[0] == '-') break;
    out.push_back(entry);
  }
  return out;
}

GpuInventory DiscoverGpus(const EnvLookup& getenv) {
  return DiscoverGpus(getenv, NvmlDeviceCount);
}

GpuInventory DiscoverGpus(const EnvLookup& getenv, const GpuCountFn& nvml_count) {
  GpuInventory inv;
  if (std::optional<std::string> cvd = getenv("CUDA_VISIBLE_DEVICES")) {
    inv.visible = ParseCudaVisibleDevices(*cvd);
    inv.source = "CUDA_VISIBLE_DEVICES";
    return inv;
  }
  std::optional<int> n = nvml_count ? nvml_count() : std::nullopt;
  if (n && *n > 0) {
    for (int i = 0; i < *n; ++i) inv.visible.push_back(std::to_string(i));
    inv.source = "nvml";
    return inv;
  }
  inv.source = "none";
  return inv;
}

}  // namespace dlaunch
