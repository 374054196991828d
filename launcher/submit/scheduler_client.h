// SchedulerClient: the I/O half of `dlaunch submit` and the scheduler's side of `status` and
// `cancel`. It runs what the job's Scheduler adapter (scheduler.h) says -- qsub/qstat/qdel,
// sbatch/squeue/scontrol/scancel, or a detached local script -- through a CommandRunner, and
// hands the replies back to the adapter to read.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/command_runner.h"
#include "launcher/submit/scheduler.h"
#include "launcher/submit/site_profile.h"

namespace dlaunch {

// The program names `scheduler` uses (Scheduler::ResolveCommands); empty for an unknown name.
// `getenv` is injected for tests; `profile` may be null when the job's profile is no longer
// available.
SchedulerCommands ResolveSchedulerCommands(const std::string& scheduler,
                                           const SiteProfile* profile, const GetEnv& getenv);

// The job id in a submit command's output (Scheduler::ParseSubmitOutput); InvalidArgument for
// an unknown scheduler.
absl::StatusOr<std::string> ParseSubmitOutput(const std::string& scheduler,
                                              const std::string& output);

class SchedulerClient {
 public:
  SchedulerClient(std::string scheduler, SchedulerCommands commands, CommandRunner runner);

  // Submits `script_path` and returns the scheduler's job id. Local: starts the script as its
  // own session in the background, output to <job_dir>/scheduler.out, and returns its pid.
  // Unavailable (exit 3 territory) when the program is missing or refuses the job.
  absl::StatusOr<std::string> Submit(const std::string& script_path, const std::string& job_dir);

  // The scheduler's view. `job_dir` lets the local scheduler tell its own process from a reused
  // pid.
  absl::StatusOr<SchedulerJobStatus> Query(const std::string& scheduler_job_id,
                                           const std::string& job_dir);

  // qdel / scancel; local: SIGTERM to the script's process group.
  absl::Status Cancel(const std::string& scheduler_job_id);

 private:
  absl::StatusOr<CommandResult> Run(const std::vector<std::string>& argv);
  absl::Status UnknownScheduler() const;

  std::string scheduler_name_;
  const Scheduler* scheduler_;  // from FindScheduler; null for an unknown name
  SchedulerCommands commands_;
  CommandRunner runner_;
};

}  // namespace dlaunch
