// How a supervised child ended: what ChildSupervisor reports and what the agent's decisions
// (AgentState) take in. A plain struct, so pure code can use it without the process layer.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace dlaunch {

struct ChildExit {
  int rank = -1;
  int local_rank = -1;
  pid_t pid = -1;
  int wait_status = 0;
  bool stopped = false;                 // ended after we asked it to stop
  std::vector<std::string> tail;        // last lines of its output
};

}  // namespace dlaunch
