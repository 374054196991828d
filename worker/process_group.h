// Initialises the c10d process group from the torchrun environment: a TCPStore at
// MASTER_ADDR:MASTER_PORT (rank 0 serves it) and NCCL or Gloo on top. A store or peer that does
// not answer within the store timeout is a DeadlineExceeded/Unavailable error, never a hang.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <torch/torch.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "absl/status/statusor.h"
#include "worker/distributed_env.h"

namespace dlaunch::worker {

struct ProcessGroupHandle {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::ProcessGroup> group;
  std::string backend;  // "gloo" or "nccl"
};

// backend_flag: auto (NCCL when use_cuda, else Gloo), nccl or gloo.
absl::StatusOr<ProcessGroupHandle> CreateProcessGroup(const DistributedEnv& env,
                                                      const std::string& backend_flag,
                                                      bool use_cuda,
                                                      std::chrono::milliseconds store_timeout,
                                                      std::chrono::milliseconds collective_timeout);

// Shuts the group's backends down after the job's last collective (PyTorch 2.x: NCCL's
// communicators are destroyed and its watchdog ends, instead of a warning at exit that
// destroy_process_group() was not called). Nothing to do for Gloo or LibTorch 1.x.
void ShutdownProcessGroup(ProcessGroupHandle& pg);

// Sums `values` (on CPU or the group's device) in place across ranks and divides by the world
// size: the rank average used for metrics.
void AllReduceMean(const ProcessGroupHandle& pg, torch::Tensor& values);

}  // namespace dlaunch::worker
