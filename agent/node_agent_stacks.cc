// NodeAgent's stack dumps of hung ranks before their stop: one StackDumper, each rank's stacks
// sent to the launcher as they are recorded (before the rank's exit event), then the stop.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "agent/node_agent.h"
#include "agent/health/stack_dumper.h"

namespace dlaunch {

void NodeAgent::StartStackDump(const DumpStacks& dump) {
  std::vector<StackDumper::Target> targets;
  for (const auto& [pid, rank] : rank_of_pid_) {
    if (std::find(dump.ranks.begin(), dump.ranks.end(), rank) == dump.ranks.end()) continue;
    if (!dumped_ranks_.insert(rank).second) continue;
    targets.push_back({rank, pid});
  }
  if (!stack_dumper_) {
    stack_dumper_ =
        std::make_unique<StackDumper>(io_, clock_, [this](const std::string& l) { Log(l); });
  }
  if (!targets.empty()) {
    Log(absl::StrCat("recording the stacks of ", targets.size(), " rank(s) before the stop (up to ",
                     static_cast<double>(dump.budget.count()) / 1000, " s)"));
  }
  // Each rank's stacks go up before its stop, so before its exit event.
  stack_dumper_->Start(targets, job_.job_dir() + "/stacks", dump.budget,
                       [this](std::vector<StackDumper::Result> results) {
                         for (const StackDumper::Result& r : results) {
                           v1::AgentMessage msg = Message();
                           *msg.mutable_stacks() = RankStacksOf(r, job_.job_dir());
                           if (state_->session_open()) Send(std::move(msg));
                         }
                         Apply(state_->OnStacksDumped());
                       });
}

}  // namespace dlaunch
