#include "agent/health/gpu_monitor.h"

#include <dlfcn.h>

namespace dlaunch {
namespace {

constexpr int kNvmlSuccess = 0;
constexpr uint64_t kMiB = 1024 * 1024;

bool AllDigits(const std::string& s) {
  return !s.empty() && s.size() < 10 && s.find_first_not_of("0123456789") == std::string::npos;
}

template <typename Fn>
void Resolve(void* library, const char* name, Fn* fn) {
  *fn = reinterpret_cast<Fn>(dlsym(library, name));
}

}  // namespace

std::unique_ptr<GpuMonitor> GpuMonitor::Load(const std::vector<std::string>& visible,
                                             const std::string& library) {
  NvmlApi api;
  void* lib = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    auto monitor = std::make_unique<GpuMonitor>(api, visible, nullptr);
    monitor->unavailable_ = why != nullptr ? why : library + ": cannot be loaded";
    return monitor;
  }
  {
    Resolve(lib, "nvmlInit_v2", &api.init);
    Resolve(lib, "nvmlShutdown", &api.shutdown);
    Resolve(lib, "nvmlDeviceGetHandleByIndex_v2", &api.by_index);
    Resolve(lib, "nvmlDeviceGetHandleByUUID", &api.by_uuid);
    Resolve(lib, "nvmlDeviceGetUtilizationRates", &api.utilization);
    Resolve(lib, "nvmlDeviceGetMemoryInfo", &api.memory);
    Resolve(lib, "nvmlErrorString", &api.error_string);
    Resolve(lib, "nvmlDeviceGetComputeRunningProcesses_v2", &api.processes);
    Resolve(lib, "nvmlDeviceGetTemperature", &api.temperature);
    Resolve(lib, "nvmlDeviceGetPowerUsage", &api.power);
    Resolve(lib, "nvmlDeviceGetClockInfo", &api.clock);
    Resolve(lib, "nvmlDeviceGetMaxClockInfo", &api.max_clock);
    Resolve(lib, "nvmlDeviceGetCurrentClocksEventReasons", &api.clock_reasons);
    if (!api.clock_reasons) {
      Resolve(lib, "nvmlDeviceGetCurrentClocksThrottleReasons", &api.clock_reasons);
    }
  }
  return std::make_unique<GpuMonitor>(api, visible, lib);
}

GpuMonitor::GpuMonitor(const NvmlApi& api, const std::vector<std::string>& visible, void* library)
    : api_(api), library_(library) {
  if (!api_.init || !api_.shutdown || !api_.by_index || !api_.by_uuid || !api_.utilization ||
      !api_.memory) {
    unavailable_ = "the NVML library lacks an entry point the monitor needs";
    return;
  }
  if (const int rc = api_.init(); rc != kNvmlSuccess) {
    const char* text = api_.error_string != nullptr ? api_.error_string(rc) : nullptr;
    unavailable_ = "nvmlInit_v2 failed: " + std::string(text != nullptr ? text : "error") + " (" +
                   std::to_string(rc) + ")";
    return;
  }
  initialized_ = true;
  for (const std::string& entry : visible) {
    NvmlApi::Device device = nullptr;
    int rc = -1;
    if (entry.rfind("GPU-", 0) == 0) {
      rc = api_.by_uuid(entry.c_str(), &device);
    } else if (AllDigits(entry)) {
      rc = api_.by_index(static_cast<unsigned int>(std::stoul(entry)), &device);
    }
    if (rc == kNvmlSuccess) devices_.emplace_back(entry, device);
  }
}

GpuMonitor::~GpuMonitor() {
  if (initialized_) api_.shutdown();
  if (library_ != nullptr) dlclose(library_);
}

std::vector<GpuReading> GpuMonitor::Sample() const {
  std::vector<GpuReading> readings;
  for (const auto& [entry, device] : devices_) {
    NvmlApi::Utilization util{};
    NvmlApi::Memory mem{};
    if (api_.utilization(device, &util) != kNvmlSuccess ||
        api_.memory(device, &mem) != kNvmlSuccess) {
      continue;  // a GPU that cannot answer now (lost, or in reset) is left out of this sample
    }
    GpuReading r;
    r.device = entry;
    r.utilization_pct = util.gpu;
    r.memory_used_bytes = mem.used;
    r.memory_total_bytes = mem.total;
    constexpr int kNvmlTemperatureGpu = 0;
    unsigned int value = 0;
    if (api_.temperature && api_.temperature(device, kNvmlTemperatureGpu, &value) == kNvmlSuccess) {
      r.temperature_c = value;
    }
    if (api_.power && api_.power(device, &value) == kNvmlSuccess) r.power_w = value / 1000.0;
    ReadClocks(device, &r);
    readings.push_back(std::move(r));
  }
  return readings;
}

void GpuMonitor::ReadClocks(NvmlApi::Device device, GpuReading* r) const {
  constexpr int kNvmlClockSm = 1;
  unsigned int mhz = 0;
  // A clock of 0 is no reading (some virtual GPUs answer so).
  if (api_.clock && api_.clock(device, kNvmlClockSm, &mhz) == kNvmlSuccess && mhz > 0) {
    r->sm_clock_mhz = mhz;
  }
  if (api_.max_clock && api_.max_clock(device, kNvmlClockSm, &mhz) == kNvmlSuccess && mhz > 0) {
    r->sm_clock_max_mhz = mhz;
  }
  unsigned long long reasons = 0;
  if (api_.clock_reasons && api_.clock_reasons(device, &reasons) == kNvmlSuccess) {
    r->clock_event_reasons = reasons;
  }
}

std::optional<std::vector<GpuProcess>> GpuMonitor::Processes(std::string* why) const {
  if (!unavailable_.empty()) {
    *why = unavailable_;
    return std::nullopt;
  }
  if (api_.processes == nullptr) {
    *why = "this NVML lacks nvmlDeviceGetComputeRunningProcesses_v2";
    return std::nullopt;
  }
  std::vector<GpuProcess> out;
  for (const auto& [entry, device] : devices_) {
    NvmlApi::ProcessInfo infos[64];
    unsigned int count = 64;
    if (const int rc = api_.processes(device, &count, infos); rc != kNvmlSuccess) {
      *why = "GPU " + entry + ": NVML error " + std::to_string(rc);
      return std::nullopt;
    }
    for (unsigned int i = 0; i < count && i < 64; ++i) {
      out.push_back(GpuProcess{entry, static_cast<int>(infos[i].pid), infos[i].used_gpu_memory});
    }
  }
  return out;
}

void AddGpuSamples(const std::vector<GpuReading>& readings, v1::Heartbeat* heartbeat) {
  for (const GpuReading& r : readings) {
    v1::GpuSample* s = heartbeat->add_gpus();
    s->set_device(r.device);
    s->set_utilization_pct(r.utilization_pct);
    s->set_memory_used_mib(static_cast<int64_t>(r.memory_used_bytes / kMiB));
    s->set_memory_total_mib(static_cast<int64_t>(r.memory_total_bytes / kMiB));
    if (r.temperature_c) s->set_temperature_c(*r.temperature_c);
    if (r.power_w) s->set_power_w(*r.power_w);
    if (r.sm_clock_mhz) s->set_sm_clock_mhz(*r.sm_clock_mhz);
    if (r.sm_clock_max_mhz) s->set_sm_clock_max_mhz(*r.sm_clock_max_mhz);
    if (r.clock_event_reasons) s->set_clock_event_reasons(*r.clock_event_reasons);
  }
}

}  // namespace dlaunch
