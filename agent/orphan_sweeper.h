// OrphanSweeper: nothing a worker starts outlives its round. The agent is the child subreaper
// of its workers (PR_SET_CHILD_SUBREAPER): a daemon a worker starts with setsid(), or the
// grandchild of a double fork, is handed to the agent, not to init, when its parent exits, and
// is out of reach of the workers' process groups. Once a round's workers have all ended, and as
// the agent exits, the sweeper ends every process the agent adopted this way: SIGTERM (to its
// process group too when it leads one), a grace, then SIGKILL, and reaps it. Processes the
// agent spawned itself (common/process.h IsSpawnedChild) are never touched.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace dlaunch {

// Makes this process the subreaper of its descendants; false (with errno) where refused.
bool BecomeSubreaper();

// Parent pid from the text of /proc/<pid>/stat (the comm may hold spaces and parentheses); -1
// when unreadable. `state` gets the state letter (R, S, Z, ...) when not null.
pid_t ParentFromStat(const std::string& stat, char* state = nullptr);

// This process's children by /proc that it did not spawn: the orphans it adopted.
std::vector<pid_t> AdoptedChildren();

// Ends every adopted process as above, in passes (an ended daemon's own children are adopted
// next) until none is left or `passes` ran. Returns "pid (comm)" for each process ended.
std::vector<std::string> EndAdopted(std::chrono::milliseconds grace, int passes = 5);

// "ended 2 process(es) the workers left behind: 41 (python3), 42 (sleep)".
std::string DescribeEnded(const std::vector<std::string>& ended);

// Reaps adopted processes that have exited already, so none stays a zombie during a round.
int ReapAdoptedZombies();

}  // namespace dlaunch
