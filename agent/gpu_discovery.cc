#include "agent/gpu_discovery.h"

#include <dlfcn.h>

#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"

namespace dlaunch {

std::optional<std::string> ProcessGetenv(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

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

GpuInventory DiscoverGpus(const GetenvFn& getenv) {
  return DiscoverGpus(getenv, NvmlDeviceCount);
}

GpuInventory DiscoverGpus(const GetenvFn& getenv, const GpuCountFn& nvml_count) {
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
