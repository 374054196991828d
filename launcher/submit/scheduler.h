// Scheduler: everything one batch system (PBS, Cobalt, Slurm, or the local machine) does
// differently, behind one interface. Adapters only build argv and read replies -- pure, tested
// against recorded output; SchedulerClient runs what they say through a CommandRunner. Adding a
// scheduler means adding one adapter and one registry line.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/command_runner.h"
#include "common/environment.h"

namespace dlaunch {

struct SiteProfile;

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

// Looks up an environment variable; nullptr when unset.
using GetEnv = EnvLookup;  // the one environment lookup (common/environment.h)

class Scheduler {
 public:
  virtual ~Scheduler() = default;

  // "pbs", "cobalt", "slurm", "local" (names.h).
  virtual std::string_view name() const = 0;

  // The site profile a job of this type uses when job.yaml names none.
  virtual std::string_view default_site() const = 0;

  // Program names: environment variables (DLAUNCH_QSUB, DLAUNCH_SBATCH, ...) win over the
  // profile's `commands` (profile may be null), which win over the usual names.
  virtual SchedulerCommands ResolveCommands(const SiteProfile* profile,
                                            const GetEnv& getenv) const = 0;

  // Submitting `script` for the job in `job_dir`, and the job id in the command's reply.
  virtual std::vector<std::string> SubmitArgv(const SchedulerCommands& commands,
                                              const std::string& script,
                                              const std::string& job_dir) const = 0;
  virtual absl::StatusOr<std::string> ParseSubmitOutput(const std::string& output) const = 0;
  // The whole reply: by default a failed command is Unavailable with the scheduler's message,
  // and a successful one is read by ParseSubmitOutput.
  virtual absl::StatusOr<std::string> ParseSubmitReply(const std::vector<std::string>& argv,
                                                       const CommandResult& reply) const;

  // Status queries, asked in order from step 0: StatusArgv returns {} when there is no such
  // step. A reading of not_in_queue hands over to the next step (Slurm: squeue forgets
  // finished jobs, scontrol may still know how they ended).
  virtual std::vector<std::string> StatusArgv(const SchedulerCommands& commands,
                                              const std::string& job_id,
                                              const std::string& job_dir, int step) const = 0;
  virtual SchedulerJobStatus ParseStatus(int step, const CommandResult& reply,
                                         const std::string& job_id,
                                         const std::string& job_dir) const = 0;

  // Cancelling a job, and what a failed cancel means.
  virtual absl::StatusOr<std::vector<std::string>> CancelArgv(const SchedulerCommands& commands,
                                                              const std::string& job_id) const = 0;
  virtual absl::Status ParseCancelReply(const std::vector<std::string>& argv,
                                        const CommandResult& reply) const;
};

// The adapters' pure readers of scheduler replies, public so they are tested on recorded output.
// `qstat -fx ID` (PBS Pro): job_state and Exit_status.
SchedulerJobStatus ParsePbsQstat(const std::string& output);
// `qstat ID` (Cobalt): the State column of the row for `job_id`.
SchedulerJobStatus ParseCobaltQstat(const std::string& output, const std::string& job_id);
// `squeue -h -j ID -o %T`: one state word, empty when the job left the queue.
SchedulerJobStatus ParseSqueue(const std::string& output);
// `scontrol show job -o ID`: JobState= and ExitCode=.
SchedulerJobStatus ParseScontrolShowJob(const std::string& output);
// `cat /proc/PID/stat /proc/PID/cmdline` (local): running while the process is alive, not a
// zombie, and its command line names `job_dir` (so a reused pid is not mistaken for the job).
SchedulerJobStatus ParseLocalProcess(const std::string& output, const std::string& job_dir);

// The adapter for `name`, or nullptr for a name not in SchedulerTypeNames(). The adapters are
// stateless and live for the whole program.
const Scheduler* FindScheduler(std::string_view name);

// Shared by the adapters.
namespace scheduler_text {
// Non-empty lines, blanks stripped.
std::vector<std::string> Lines(const std::string& text);
// Environment first, then the profile's value, then the usual name.
std::string Pick(const std::optional<std::string>& env, const std::string& profile_value,
                 const char* fallback);
// qsub, qstat and qdel (PBS and Cobalt share the names and their DLAUNCH_Q* overrides).
SchedulerCommands QsubFamilyCommands(const SiteProfile* profile, const GetEnv& getenv);
// The Unavailable error for a submit reply that holds no job id.
absl::Status NoJobId(std::string_view scheduler, const std::string& output);
SchedulerJobStatus NotInQueue();
}  // namespace scheduler_text

}  // namespace dlaunch
