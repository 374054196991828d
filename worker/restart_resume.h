// Whether a dlaunch-worker run resumes from its checkpoint directory. A job that restarts in a
// new round (TORCHELASTIC_RESTART_COUNT > 0) resumes as if --resume were given, so a restart
// loses at most one checkpoint interval of work. Pure.
#pragma once

#include <string>

#include "worker/worker_options.h"

namespace dlaunch::worker {

struct ResumePlan {
  bool resume = false;
  std::string note;  // a line for the rank's log; empty when there is nothing to say
};

// `restart_count` is TORCHELASTIC_RESTART_COUNT (0 in a job's first round).
ResumePlan PlanResume(const WorkerOptions& options, int restart_count);

}  // namespace dlaunch::worker
