// The agent's side of the preflight exchange: ask the launcher for the plan over the control
// session, then run it on this node (agent/health/preflight.h holds the checks themselves).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/health/preflight.h"
#include "dlaunch/control.pb.h"

namespace dlaunch {

class ControlClient;
struct GpuInventory;

// Asks the launcher for the plan (waiting up to `timeout` for it to answer) and runs it on this
// node with its GPUs as `gpus` and `monitor` see them, then the collective check with the other
// nodes (agent/collective_check.h) at `addr`, where peers reach it: the results to join with.
absl::StatusOr<std::vector<v1::CheckResult>> PreflightThisNode(ControlClient& client,
                                                               const v1::PreflightRequest& request,
                                                               const GpuInventory& gpus,
                                                               const GpuMonitor& monitor,
                                                               std::chrono::milliseconds timeout,
                                                               const std::string& addr);

}  // namespace dlaunch
