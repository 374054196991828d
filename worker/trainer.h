// The dlaunch-worker training run: process group, model, sharded data, DDP gradient averaging
// through c10d's Reducer (bucketed all-reduce overlapped with backward), rank-0 checkpoints,
// resume, rank-averaged metrics and reports. Free of LibTorch types so main() stays a cheap TU.
#pragma once

#include "absl/status/status.h"
#include "worker/distributed_env.h"
#include "worker/worker_options.h"

namespace dlaunch::worker {

// Trains to the end. InvalidArgument/FailedPrecondition for bad input (exit 2), other errors
// for failures at run time (exit 1).
absl::Status RunTraining(const WorkerOptions& options, const DistributedEnv& env);

}  // namespace dlaunch::worker
