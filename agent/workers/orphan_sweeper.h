// OrphanSweeper: nothing a worker starts outlives its round. The agent is the child subreaper
// of its workers (PR_SET_CHILD_SUBREAPER): a daemon a worker starts with setsid(), or the
// grandchild of a double fork, is handed to the agent, not to init, when its parent exits, and
// is out of reach of the workers' process groups. Once a round's workers have all ended, and as
// the agent exits, the sweeper ends every process the agent adopted this way: SIGTERM (to its
// process group too when it leads one), a grace, then SIGKILL, and reaps it; then it kills what
// is left in the workers' cgroup (agent/workers/job_cgroup.h). Both are escalations
// (common/escalation.h) run as timer steps on the agent's loop, whose heartbeats go on
// meanwhile. Processes the agent spawned itself (common/process.h IsSpawnedChild) are never
// touched.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/workers/job_cgroup.h"
#include "common/clock.h"
#include "common/escalation_driver.h"

namespace dlaunch {

// Makes this process the subreaper of its descendants; false (with errno) where refused.
bool BecomeSubreaper();

// Parent pid from the text of /proc/<pid>/stat (the comm may hold spaces and parentheses); -1
// when unreadable. `state` gets the state letter (R, S, Z, ...) when not null.
pid_t ParentFromStat(const std::string& stat, char* state = nullptr);

// This process's children by /proc that it did not spawn: the orphans it adopted.
std::vector<pid_t> AdoptedChildren();

// The adopted processes as an escalation's target: listing them reaps those that exited (an
// ended daemon's own children are adopted next, and listed then); a signal goes to the process
// group too when the process leads one. "pid (comm)" of each process found goes to `found`,
// which must outlive it.
EscalationTarget AdoptedTarget(std::vector<std::string>* found);

// Ends every adopted process as above, blocking. Returns "pid (comm)" for each process ended.
std::vector<std::string> EndAdopted(std::chrono::milliseconds grace);

// "ended 2 process(es) the workers left behind: 41 (python3), 42 (sleep)".
std::string DescribeEnded(const std::vector<std::string>& ended);

// Reaps adopted processes that have exited already, so none stays a zombie during a round.
int ReapAdoptedZombies();

// The agent's sweep, as timer steps on its loop. Runs on the loop's thread.
class OrphanSweeper {
 public:
  using LogFn = std::function<void(const std::string&)>;
  // Looks every kPoll while a process is left; gives up on the cgroup after
  // JobCgroup::kKillLimit, on an adopted process kKillLimit after its SIGKILL.
  static constexpr std::chrono::milliseconds kPoll{10};
  static constexpr std::chrono::milliseconds kKillLimit{2000};

  // `clock` must outlive the sweeper.
  OrphanSweeper(TimerClock& clock, LogFn log) : clock_(clock), log_(std::move(log)) {}

  // Ends the adopted processes with `grace` (0: SIGKILL at once), then kills what is left in
  // `cgroup` (null: none; it must outlive the sweep), logs what it ended, and runs `done`: at
  // once when nothing was left, else from a timer. Asked while a sweep runs, it runs after that
  // one (the workers may have left more since it looked), its `done` after the earlier's; a
  // grace of 0 also brings the running sweep's SIGKILL forward to now.
  void Sweep(std::chrono::milliseconds grace, JobCgroup* cgroup, std::function<void()> done);
  bool busy() const { return current_.has_value(); }

 private:
  struct Request {
    std::chrono::milliseconds grace{0};
    JobCgroup* cgroup = nullptr;
    std::vector<std::function<void()>> done;
  };
  void Begin(Request request);
  void AdoptedSwept();
  void Finish();

  TimerClock& clock_;
  LogFn log_;
  std::optional<Request> current_;
  std::optional<Request> next_;
  std::unique_ptr<TimedEscalation> escalation_;
  std::vector<std::string> ended_;   // adopted processes ended by the current sweep
  std::vector<std::string> killed_;  // and processes killed in the cgroup
};

}  // namespace dlaunch
