// What the agent needs before it starts its workers: the job directory's folders, and one
// start request per local rank (argv, environment, working directory) built from the
// launcher's JoinResponse and the local-rank plan. BuildStartRequests is pure.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "agent/core/agent_state.h"
#include "agent/placement/local_rank_plan.h"
#include "agent/workers/worker_env.h"
#include "common/child_supervisor.h"
#include "dlaunch/control.pb.h"

namespace dlaunch {

// What the placement of this node's ranks is asked for, from the job's worker template:
// nproc, GPUs per rank, GPU order (by locality when isolated), CPU binding and explicit map.
PlacementRequest PlacementRequestFor(const v1::JoinResponse& job, const std::string& host);

// One slot per local rank with no GPU or CPU: what failed starts are reported against when the
// node cannot be planned.
std::vector<RankSlot> UnplacedSlots(const v1::JoinResponse& job);

// torchrun's macro: every "${local_rank}" in `argv` replaced by `local_rank`, so a torchrun
// command line such as `train.py --local_rank=${local_rank}` runs unchanged.
std::vector<std::string> SubstituteLocalRank(std::vector<std::string> argv, int local_rank);

// One request per slot, in plan order: global rank = the node's rank offset + local rank.
// Each worker is pinned to its slot's CPUs (none when the slot has none).
// `base_env` is the agent's own environment; `report_socket` is DLAUNCH_REPORT_SOCKET;
// `worker_socket_dir` holds each rank's TORCH_WORKER_SERVER_SOCKET ("": the variable is left out).
// Removes what an earlier round left at each rank's error file and socket path.
std::vector<ChildSupervisor::StartRequest> BuildStartRequests(
    const v1::JoinResponse& job, const std::vector<RankSlot>& plan, const EnvMap& base_env,
    const std::string& report_socket, const std::string& worker_socket_dir = "");

// How a worker's end is reported to the launcher.
v1::WorkerEvent::State WorkerEventState(WorkerOutcome outcome);

// Creates <job_dir>, <job_dir>/logs and <job_dir>/errors (existing ones are fine). The
// launcher usually made them already; this covers a node that does not share its file system.
absl::Status MakeJobDirs(const std::string& job_dir);

// How many bytes of its output each rank's log keeps (ChildSupervisor::SetLogLimit):
// DLAUNCH_WORKER_LOG_LIMIT in the agent's environment (bytes, or with a K, M or G suffix: "512M"),
// else ChildSupervisor::kDefaultLogLimit (2 GiB); a value that does not parse is ignored.
int64_t WorkerLogLimit(const EnvMap& env);

// A rank's output line as the launcher shows it: cut at 4 KiB, saying how much more the rank's
// log file holds.
std::string ShownLine(std::string line, int rank);

// The plan as kept in the job directory: `note` (which CPUs were planned in, when known) and
// one DescribeRankSlot line per rank with its global rank.
std::string PlacementText(const v1::JoinResponse& job, const std::vector<RankSlot>& plan,
                          const std::string& note);

// Writes PlacementText to <job_dir>/placement/node-<node_rank>.txt.
absl::Status WritePlacementFile(const v1::JoinResponse& job, const std::string& text);

}  // namespace dlaunch
