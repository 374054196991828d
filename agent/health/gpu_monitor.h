// GpuMonitor: utilisation, memory, temperature, power and SM clock of the node's visible GPUs for
// the heartbeat, read through NVML loaded at run time (dlopen of libnvidia-ml.so.1), so the agent
// keeps no CUDA dependency: without the library (CPU nodes, build machines) it reads nothing and
// heartbeats carry no GPU samples. The NVML entry points sit in a table, so a test drives the
// monitor with fakes.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dlaunch/control.pb.h"

namespace dlaunch {

// One GPU at one moment.
struct GpuReading {
  std::string device;            // the GpuInventory entry it was opened by
  double utilization_pct = 0;    // NVML's busy share over its last sample period
  uint64_t memory_used_bytes = 0;
  uint64_t memory_total_bytes = 0;
  std::optional<double> temperature_c;  // where NVML answers
  std::optional<double> power_w;
  std::optional<double> sm_clock_mhz;      // the SM clock now
  std::optional<double> sm_clock_max_mhz;  // the most it can run at
  // NVML's clock event (throttle) reasons now: why the clocks are below their most (a bit mask).
  std::optional<uint64_t> clock_event_reasons;
};

// One process NVML lists on a GPU (a compute context).
struct GpuProcess {
  std::string device;      // the GpuInventory entry
  int pid = 0;
  uint64_t used_bytes = 0;
};

// The NVML entry points the monitor uses, with nvml.h's signatures (declared here so that no
// CUDA header is needed to build). Every one returns 0 (NVML_SUCCESS) on success.
struct NvmlApi {
  using Device = void*;
  struct Utilization {  // nvmlUtilization_t
    unsigned int gpu;
    unsigned int memory;
  };
  struct Memory {  // nvmlMemory_t
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
  };
  int (*init)() = nullptr;                              // nvmlInit_v2
  int (*shutdown)() = nullptr;                          // nvmlShutdown
  int (*by_index)(unsigned int, Device*) = nullptr;     // nvmlDeviceGetHandleByIndex_v2
  int (*by_uuid)(const char*, Device*) = nullptr;       // nvmlDeviceGetHandleByUUID
  int (*utilization)(Device, Utilization*) = nullptr;   // nvmlDeviceGetUtilizationRates
  int (*memory)(Device, Memory*) = nullptr;             // nvmlDeviceGetMemoryInfo
  struct ProcessInfo {  // nvmlProcessInfo_v2_t
    unsigned int pid;
    unsigned long long used_gpu_memory;
    unsigned int gpu_instance_id;
    unsigned int compute_instance_id;
  };
  // nvmlDeviceGetComputeRunningProcesses_v2 (optional: older drivers lack it)
  int (*processes)(Device, unsigned int*, ProcessInfo*) = nullptr;
  const char* (*error_string)(int) = nullptr;           // nvmlErrorString (optional)
  // nvmlDeviceGetTemperature with NVML_TEMPERATURE_GPU (0), degrees C (optional)
  int (*temperature)(Device, int, unsigned int*) = nullptr;
  int (*power)(Device, unsigned int*) = nullptr;        // nvmlDeviceGetPowerUsage, mW (optional)
  // nvmlDeviceGetClockInfo and nvmlDeviceGetMaxClockInfo with an nvmlClockType_t (NVML_CLOCK_SM
  // is 1), MHz (optional)
  int (*clock)(Device, int, unsigned int*) = nullptr;
  int (*max_clock)(Device, int, unsigned int*) = nullptr;
  // nvmlDeviceGetCurrentClocksEventReasons, or nvmlDeviceGetCurrentClocksThrottleReasons (the
  // same call under its older name, which every driver exports), a bit mask (optional)
  int (*clock_reasons)(Device, unsigned long long*) = nullptr;
};

class GpuMonitor {
 public:
  // NVML from `library`; a monitor that reads nothing when the library, one of its entry points
  // or nvmlInit is missing. `visible` lists GpuInventory entries: NVML indices or GPU- UUIDs
  // (MIG entries are not read).
  static std::unique_ptr<GpuMonitor> Load(const std::vector<std::string>& visible,
                                          const std::string& library = "libnvidia-ml.so.1");
  // With a given API (tests); `library` is dlclose'd at the end when not null.
  GpuMonitor(const NvmlApi& api, const std::vector<std::string>& visible, void* library = nullptr);
  ~GpuMonitor();
  GpuMonitor(const GpuMonitor&) = delete;
  GpuMonitor& operator=(const GpuMonitor&) = delete;

  // Devices it could open.
  int devices() const { return static_cast<int>(devices_.size()); }
  // Why it reads nothing ("no GPU health"), e.g. "nvmlInit_v2 failed: Driver Not Loaded (9)";
  // empty when NVML answered.
  const std::string& unavailable() const { return unavailable_; }
  // One reading per open device that answered now.
  std::vector<GpuReading> Sample() const;
  // The compute processes on the open devices; nullopt (with *why) when NVML cannot list them.
  std::optional<std::vector<GpuProcess>> Processes(std::string* why) const;

 private:
  // The SM clock, its most and the clock event reasons, where NVML tells them.
  void ReadClocks(NvmlApi::Device device, GpuReading* r) const;

  NvmlApi api_;
  void* library_ = nullptr;
  bool initialized_ = false;
  std::string unavailable_;
  std::vector<std::pair<std::string, NvmlApi::Device>> devices_;
};

// `readings` as heartbeat GPU samples (memory in MiB).
void AddGpuSamples(const std::vector<GpuReading>& readings, v1::Heartbeat* heartbeat);

}  // namespace dlaunch
