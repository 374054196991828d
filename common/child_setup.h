// What a forked child does before it becomes its program: shared by ForkProcess (process.h,
// before its exec) and dlaunch-worker's warm process (worker/warm_serve.h, a forked rank), so
// in dlaunch_common, which the worker may link.
#pragma once

#include <sys/types.h>

namespace dlaunch {

// In a child process before it becomes its program (ForkProcess's exec, or a rank forked from
// dlaunch-worker's warm process); async-signal-safe calls only. Sends it `death_signal` (0: none)
// when `parent` ends, and returns false where `parent` already has; lets `parent` trace it
// (`traceable`: its stacks read from the agent); clears the signal mask and the handlers that
// the parent set or ignored (asio blocks signals in some threads).
bool TieChildToParent(pid_t parent, int death_signal, bool traceable);

}  // namespace dlaunch
