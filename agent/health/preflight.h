// Preflight: what a node checks before it joins the job (docs/preflight.md). The launcher's
// PreflightPlan says what the job needs; each check gives one CheckResult with its figure:
//   gpus           the GPUs the node sees against gpus.per_node
//   gpu processes  processes already on those GPUs (NVML): another user's, or a stale job's
//   disk           free space of the job directory, TMPDIR and preflight.paths
//   command        the worker program exists and runs; for Python, the script exists and the
//                  interpreter starts and finds what the job needs (torch) without importing it
//                  (preflight.import_check: import imports it), timed
//   ports          the ports the job binds (rendezvous.master_port) are free here
//   clock          this node's wall clock against the launcher's
//   link, compute  the collective check against the other nodes (agent/collective_check.h,
//                  docs/stragglers.md), run by the shell after these
// Each check is bounded in time; the command check (the slow one) runs beside the others.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/health/gpu_monitor.h"
#include "agent/workers/worker_env.h"
#include "common/python_command.h"
#include "dlaunch/control.pb.h"

namespace dlaunch {

struct DiskFree {
  int64_t free_bytes = 0;  // available to this user
  int64_t total_bytes = 0;
};

// What the checks read about the node; the seams let the unit tests give figures.
struct PreflightNode {
  int gpus_seen = 0;
  std::string gpu_source;                            // GpuInventory::source
  // Processes on the visible GPUs; nullopt when NVML cannot say (with the reason).
  std::optional<std::vector<GpuProcess>> gpu_processes;
  std::string gpu_processes_unavailable;
  EnvMap env;                                        // the agent's environment
  // The agent's wall clock (ms since the epoch) as it asked for the plan and as it got it.
  int64_t asked_ms = 0;
  int64_t answered_ms = 0;
  std::function<absl::StatusOr<DiskFree>(const std::string&)> disk_free;  // statvfs
  std::function<std::string(int pid)> owner_of;     // the user running `pid`
};

// Runs every check of `plan` on this node; empty when the plan is disabled.
std::vector<v1::CheckResult> RunPreflight(const v1::PreflightPlan& plan, PreflightNode node);

// The single checks (RunPreflight's parts), for tests.
v1::CheckResult CheckGpus(int required, int seen, const std::string& source);
v1::CheckResult CheckGpuProcesses(const PreflightNode& node);
v1::CheckResult CheckDisk(const v1::PreflightPlan& plan, const PreflightNode& node);
v1::CheckResult CheckCommand(const v1::PreflightPlan& plan, const EnvMap& env);
v1::CheckResult CheckPorts(const std::vector<int>& ports);
v1::CheckResult CheckClock(int64_t launcher_ms, int64_t asked_ms, int64_t answered_ms,
                           int max_offset_ms);

// statvfs of `path`, or of its nearest existing parent (the job directory may not exist yet).
absl::StatusOr<DiskFree> StatDiskFree(const std::string& path);
// The user name (or uid) owning /proc/<pid>.
std::string ProcessOwner(int pid);

}  // namespace dlaunch
