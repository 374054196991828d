#include "agent/node_preflight.h"

#include <chrono>

#include "agent/collective_check.h"
#include "agent/collective_engine.h"
#include "agent/control_client.h"
#include "agent/placement/gpu_discovery.h"
#include "rendezvous/rendezvous_state.h"

namespace dlaunch {

absl::StatusOr<std::vector<v1::CheckResult>> PreflightThisNode(ControlClient& client,
                                                               const v1::PreflightRequest& request,
                                                               const GpuInventory& gpus,
                                                               const GpuMonitor& monitor,
                                                               std::chrono::milliseconds timeout,
                                                               const std::string& addr) {
  auto wall_ms = [] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  PreflightNode node;
  node.asked_ms = wall_ms();
  absl::StatusOr<v1::PreflightPlan> plan = client.Preflight(request, timeout);
  node.answered_ms = wall_ms();
  if (!plan.ok()) return plan.status();
  node.gpus_seen = gpus.count();
  node.gpu_source = gpus.source;
  node.gpu_processes = monitor.Processes(&node.gpu_processes_unavailable);
  node.env = ProcessEnv();
  std::vector<v1::CheckResult> checks = RunPreflight(*plan, std::move(node));
  if (plan->enabled() && plan->collective().enabled()) {
    // After the node's own checks: a node that failed them is not measured, only counted.
    const CollectiveEngine engine = ChooseCollectiveEngine(
        *plan, ProcessEnv(), gpus.count(),
        [&](SpawnOptions probe) { return RunCommandWith(std::move(probe), 10); });
    std::vector<v1::CheckResult> peers = CollectiveCheckThisNode(
        client, plan->collective(), {request.agent_id(), request.host(), addr},
        FailedChecks(checks).empty(), engine);
    checks.insert(checks.end(), peers.begin(), peers.end());
  }
  return checks;
}

}  // namespace dlaunch
