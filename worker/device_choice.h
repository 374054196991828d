// ChooseDevice: which device a rank trains on, from --device, its LOCAL_RANK, the agent's GPU
// plan (DLAUNCH_GPU), CUDA_VISIBLE_DEVICES and what the CUDA runtime reports. Pure: the probe of
// the runtime is passed in, so every case is unit-tested on machines without a GPU.
//
// The index follows torchrun's convention (LOCAL_RANK indexes the visible devices) unless the
// agent planned the rank's GPU: then it is that entry's position in CUDA_VISIBLE_DEVICES, which
// is also right when `gpus.binding: isolate` narrowed the list to the rank's own GPU, and when
// ranks share GPUs round-robin.
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "common/environment.h"

namespace dlaunch::worker {

enum class DeviceKind { kCpu, kCuda };

struct DeviceRequest {
  std::string flag = "auto";                       // --device: auto, cpu, cuda
  int local_rank = 0;
  std::optional<std::string> cuda_visible_devices;  // unset: every device of the node
  std::string planned_gpus;                         // DLAUNCH_GPU, e.g. "2" or "0,1"; may be empty
  std::string host;                                 // this node's name, for the message
};

// What the CUDA runtime of this build says.
struct CudaProbe {
  bool built_with_cuda = false;
  std::string libtorch_version;  // e.g. "1.13.1", for the message of a CPU-only build
  int device_count = 0;
  std::string error;             // why device_count is 0, in the runtime's words; may be empty
};

struct DeviceChoice {
  DeviceKind kind = DeviceKind::kCpu;
  int index = 0;          // CUDA device index within the visible list
  std::string described;  // e.g. "cuda:1 (CUDA_VISIBLE_DEVICES=0,1, LOCAL_RANK 1)" or "cpu"
};

// FailedPrecondition (the worker exits 2 before it trains) with one line naming the node and
// the cause when --device cuda cannot be honoured, or when a GPU is chosen for a rank whose
// index is past the visible devices. InvalidArgument for an unknown flag value.
absl::StatusOr<DeviceChoice> ChooseDevice(const DeviceRequest& request, const CudaProbe& probe);

// The request fields from the environment (LOCAL_RANK is read by ReadDistributedEnv).
DeviceRequest DeviceRequestFromEnv(const EnvLookup& lookup, std::string flag, int local_rank);

}  // namespace dlaunch::worker
