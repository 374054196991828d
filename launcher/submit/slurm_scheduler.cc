#include "launcher/submit/slurm_scheduler.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "launcher/submit/site_profile.h"

namespace dlaunch {
namespace {

std::string SlurmStateName(const std::string& s) {
  if (s == "PENDING" || s == "CONFIGURING" || s == "REQUEUED" || s == "RESIZING") {
    return "queued";
  }
  if (s == "SUSPENDED" || s == "REQUEUE_HOLD" || s == "STOPPED") return "held";
  if (s == "RUNNING") return "running";
  if (s == "COMPLETING" || s == "SIGNALING" || s == "STAGE_OUT") return "exiting";
  if (s == "COMPLETED") return "finished";
  if (s == "CANCELLED") return "cancelled";
  if (s == "FAILED" || s == "TIMEOUT" || s == "NODE_FAIL" || s == "OUT_OF_MEMORY" ||
      s == "BOOT_FAIL" || s == "DEADLINE" || s == "PREEMPTED") {
    return "failed";
  }
  return "unknown";
}

// Status steps: squeue while the job is queued or running, then scontrol.
constexpr int kSqueueStep = 0;
constexpr int kScontrolStep = 1;

}  // namespace

SchedulerJobStatus ParseSqueue(const std::string& output) {
  const std::vector<std::string> lines = scheduler_text::Lines(output);
  if (lines.empty()) return scheduler_text::NotInQueue();
  SchedulerJobStatus s;
  s.raw_state = lines[0];
  s.state = SlurmStateName(lines[0]);
  return s;
}

SchedulerJobStatus ParseScontrolShowJob(const std::string& output) {
  SchedulerJobStatus s = scheduler_text::NotInQueue();
  for (absl::string_view word : absl::StrSplit(output, absl::ByAnyChar(" \t\n"),
                                               absl::SkipEmpty())) {
    if (absl::ConsumePrefix(&word, "JobState=")) {
      s.raw_state = std::string(word);
      s.state = SlurmStateName(s.raw_state);
    } else if (absl::ConsumePrefix(&word, "ExitCode=")) {
      s.exit_status = std::string(word);
    }
  }
  return s;
}

std::string_view SlurmScheduler::name() const { return "slurm"; }
std::string_view SlurmScheduler::default_site() const { return "generic-slurm"; }

SchedulerCommands SlurmScheduler::ResolveCommands(const SiteProfile* profile,
                                                  const GetEnv& getenv) const {
  const SiteProfile empty;
  const SiteProfile& p = profile != nullptr ? *profile : empty;
  SchedulerCommands c;
  c.submit = scheduler_text::Pick(getenv("DLAUNCH_SBATCH"), p.submit_command, "sbatch");
  c.status = scheduler_text::Pick(getenv("DLAUNCH_SQUEUE"), p.status_command, "squeue");
  c.cancel = scheduler_text::Pick(getenv("DLAUNCH_SCANCEL"), p.cancel_command, "scancel");
  c.scontrol = scheduler_text::Pick(getenv("DLAUNCH_SCONTROL"), "", "scontrol");
  return c;
}

std::vector<std::string> SlurmScheduler::SubmitArgv(const SchedulerCommands& commands,
                                                    const std::string& script,
                                                    const std::string& job_dir) const {
  return {commands.submit, "--parsable", script};
}

absl::StatusOr<std::string> SlurmScheduler::ParseSubmitOutput(const std::string& output) const {
  const std::vector<std::string> lines = scheduler_text::Lines(output);
  if (lines.empty()) return scheduler_text::NoJobId(name(), output);
  // --parsable prints "123" or "123;cluster".
  std::string id = lines.back().substr(0, lines.back().find(';'));
  int64_t n = 0;
  // Array and het jobs print "123_4" / "123+0"; keep the text as Slurm printed it.
  std::string digits = id.substr(0, id.find_first_not_of("0123456789"));
  if (digits.empty() || !absl::SimpleAtoi(digits, &n)) {
    return scheduler_text::NoJobId(name(), output);
  }
  return id;
}

std::vector<std::string> SlurmScheduler::StatusArgv(const SchedulerCommands& commands,
                                                    const std::string& job_id,
                                                    const std::string& job_dir, int step) const {
  if (step == kSqueueStep) return {commands.status, "-h", "-j", job_id, "-o", "%T"};
  if (step == kScontrolStep) return {commands.scontrol, "show", "job", "-o", job_id};
  return {};
}

SchedulerJobStatus SlurmScheduler::ParseStatus(int step, const CommandResult& reply,
                                               const std::string& job_id,
                                               const std::string& job_dir) const {
  if (reply.exit_code != 0) return scheduler_text::NotInQueue();
  // squeue forgets finished jobs after MinJobAge; scontrol may still know how they ended.
  return step == kSqueueStep ? ParseSqueue(reply.out) : ParseScontrolShowJob(reply.out);
}

absl::StatusOr<std::vector<std::string>> SlurmScheduler::CancelArgv(
    const SchedulerCommands& commands, const std::string& job_id) const {
  return std::vector<std::string>{commands.cancel, job_id};
}

}  // namespace dlaunch
