// What the agent needs before it starts its workers: the job directory's folders, and one
// start request per local rank (argv, environment, working directory) built from the
// launcher's JoinResponse and the local-rank plan. BuildStartRequests is pure.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "agent/local_rank_plan.h"
#include "agent/worker_env.h"
#include "common/child_supervisor.h"
#include "dlaunch/control.pb.h"

namespace dlaunch {

// One request per slot, in plan order: global rank = the node's rank offset + local rank.
// `base_env` is the agent's own environment; `report_socket` is DLAUNCH_REPORT_SOCKET.
std::vector<ChildSupervisor::StartRequest> BuildStartRequests(const v1::JoinResponse& job,
                                                              const std::vector<RankSlot>& plan,
                                                              const EnvMap& base_env,
                                                              const std::string& report_socket);

// Creates <job_dir>, <job_dir>/logs and <job_dir>/errors (existing ones are fine). The
// launcher usually made them already; this covers a node that does not share its file system.
absl::Status MakeJobDirs(const std::string& job_dir);

}  // namespace dlaunch
