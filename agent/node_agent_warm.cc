// NodeAgent's warm process (restarts.warm_start, agent/workers/warm_start.h): started as the
// agent joins, and again at a round's start if a signal ended it (one that refused to serve, or
// whose imports failed, would do the same again: its ranks start cold, as its log says).
#include "absl/strings/str_cat.h"
#include "agent/node_agent.h"
#include "agent/workers/worker_launch.h"

namespace dlaunch {

void NodeAgent::KeepWarmProcess() {
  if (!job_.worker().warm_start()) return;
  const std::vector<std::string> argv(job_.worker().argv().begin(), job_.worker().argv().end());
  if (!WarmStartable(argv)) {
    if (!zygote_) Log("warm starts off: the worker command is neither a Python script nor dlaunch-worker");
    return;
  }
  if (zygote_ && (zygote_->alive() || zygote_->refused())) return;
  if (zygote_) {
    Log(absl::StrCat("the warm process ended (", zygote_->exit_text(),
                     "): starting it again; this round's ranks start cold"));
  }
  // Local rank 0's environment: what its libraries read at import (OMP_NUM_THREADS, ...) is the
  // node's; each rank gets its own environment when it is forked.
  RankSlot slot;
  slot.local_rank = 0;
  std::vector<ChildSupervisor::StartRequest> requests =
      BuildStartRequests(job_, {slot}, ProcessEnv(), report_socket_, "");
  auto started = Zygote::Start(requests[0].options);
  zygote_.reset();
  if (!started.ok()) {
    Log(absl::StrCat("no warm process (ranks start cold): ", started.status().message()));
    return;
  }
  zygote_ = *std::move(started);
  Log(absl::StrCat("warm process pid ", zygote_->pid(),
                   IsDlaunchWorker(argv) ? " reading the data set"
                                         : " importing the script's libraries"));
}

}  // namespace dlaunch
