// SchedulerClient: the I/O half of `dlaunch submit` and the scheduler's side of `status` and
// `cancel` -- runs qsub/qstat/qdel (PBS, Cobalt), sbatch/squeue/scontrol/scancel (Slurm), or
// starts the script in the background (local). The parsing of their output is pure and public
// so it is tested against recorded output.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "launcher/submit/site_profile.h"

namespace dlaunch {

// A scheduler's view of one job, normalised.
struct SchedulerJobStatus {
  // queued, held, running, exiting, finished, failed, cancelled, not_in_queue, unknown
  std::string state;
  std::string raw_state;    // the scheduler's own word ("R", "RUNNING", "user_hold")
  std::string exit_status;  // when the scheduler reports one
};

// Program names, after the environment and the profile had their say.
struct SchedulerCommands {
  std::string submit;    // qsub, sbatch
  std::string status;    // qstat, squeue
  std::string cancel;    // qdel, scancel
  std::string scontrol;  // Slurm only: scontrol, for jobs squeue no longer lists
};

// Environment variables (DLAUNCH_QSUB, DLAUNCH_QSTAT, DLAUNCH_QDEL for PBS and Cobalt;
// DLAUNCH_SBATCH, DLAUNCH_SQUEUE, DLAUNCH_SCANCEL, DLAUNCH_SCONTROL for Slurm) win over the
// profile's `commands`, which win over the usual names. `getenv` is injected for tests;
// `profile` may be null when the job's profile is no longer available.
SchedulerCommands ResolveSchedulerCommands(
    const std::string& scheduler, const SiteProfile* profile,
    const std::function<const char*(const char*)>& getenv);

// Pure parsers of scheduler output.
// qsub (PBS): the whole first line, e.g. "1234.polaris-pbs-01.hsn.cm.polaris.alcf.anl.gov";
// qsub (Cobalt): the last line that is a number; sbatch --parsable: "123" or "123;cluster".
absl::StatusOr<std::string> ParseSubmitOutput(const std::string& scheduler,
                                              const std::string& output);
// `qstat -fx ID` (PBS Pro): job_state and Exit_status.
SchedulerJobStatus ParsePbsQstat(const std::string& output);
// `qstat ID` (Cobalt): the State column of the row for `job_id`.
SchedulerJobStatus ParseCobaltQstat(const std::string& output, const std::string& job_id);
// `squeue -h -j ID -o %T`: one state word, empty when the job left the queue.
SchedulerJobStatus ParseSqueue(const std::string& output);
// `scontrol show job -o ID`: JobState= and ExitCode=.
SchedulerJobStatus ParseScontrolShowJob(const std::string& output);

struct CommandResult {
  int exit_code = 0;  // 128+signal when killed
  std::string out;
  std::string err;
};
// Runs argv (argv[0] looked up on PATH) and collects its output; injected so the adapter is
// tested with recorded output as well as with real programs.
using CommandRunner =
    std::function<absl::StatusOr<CommandResult>(const std::vector<std::string>& argv)>;
// fork/exec with a deadline (the program is killed after `timeout_s`).
CommandRunner RealCommandRunner(double timeout_s = 120);

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

  std::string scheduler_;
  SchedulerCommands commands_;
  CommandRunner runner_;
};

}  // namespace dlaunch
