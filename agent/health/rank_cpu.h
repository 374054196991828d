// What the agent can see of a rank's CPU without the rank's help, for the straggler score of
// scripts that send no reports (docs/stragglers.md): from the kernel's scheduler statistics,
// /proc/PID/task/*/schedstat, summed over the rank's threads, the time they ran on a CPU and the
// time they were runnable but waited for one (the run-queue delay, which also holds the time a
// cgroup's CPU quota kept them off: a throttled group's tasks stay queued). A rank that waits
// for its peers in a collective sleeps, and adds to neither; a rank starved of CPU (a quota, a
// busy node) adds to the second.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "dlaunch/control.pb.h"

namespace dlaunch {

// One schedstat line ("<run ns> <delay ns> <timeslices>"): run and delay seconds added to
// `into`; false when unreadable.
bool AddSchedstat(const std::string& line, v1::RankCpu* into);

// The rank `pid`'s counters since it started, summed over its live threads (a thread that ended
// takes its share with it: the launcher starts over when a counter goes down). nullopt when the
// process is gone or the kernel has no schedstat (CONFIG_SCHED_INFO unset).
std::optional<v1::RankCpu> ReadRankCpu(pid_t pid, const std::string& proc = "/proc");

}  // namespace dlaunch
