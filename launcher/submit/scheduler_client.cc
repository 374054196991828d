#include "launcher/submit/scheduler_client.h"

#include "absl/strings/str_cat.h"

namespace dlaunch {

SchedulerCommands ResolveSchedulerCommands(const std::string& scheduler,
                                           const SiteProfile* profile, const GetEnv& getenv) {
  const Scheduler* adapter = FindScheduler(scheduler);
  return adapter != nullptr ? adapter->ResolveCommands(profile, getenv) : SchedulerCommands{};
}

absl::StatusOr<std::string> ParseSubmitOutput(const std::string& scheduler,
                                              const std::string& output) {
  const Scheduler* adapter = FindScheduler(scheduler);
  if (adapter == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("unknown scheduler '", scheduler, "'"));
  }
  return adapter->ParseSubmitOutput(output);
}

SchedulerClient::SchedulerClient(std::string scheduler, SchedulerCommands commands,
                                 CommandRunner runner)
    : scheduler_name_(std::move(scheduler)),
      scheduler_(FindScheduler(scheduler_name_)),
      commands_(std::move(commands)),
      runner_(std::move(runner)) {}

absl::Status SchedulerClient::UnknownScheduler() const {
  return absl::InvalidArgumentError(absl::StrCat("unknown scheduler '", scheduler_name_, "'"));
}

absl::StatusOr<CommandResult> SchedulerClient::Run(const std::vector<std::string>& argv) {
  absl::StatusOr<CommandResult> r = runner_(argv);
  if (!r.ok()) return absl::UnavailableError(r.status().message());
  return r;
}

absl::StatusOr<std::string> SchedulerClient::Submit(const std::string& script_path,
                                                    const std::string& job_dir) {
  if (scheduler_ == nullptr) return UnknownScheduler();
  const std::vector<std::string> argv = scheduler_->SubmitArgv(commands_, script_path, job_dir);
  absl::StatusOr<CommandResult> r = Run(argv);
  if (!r.ok()) return r.status();
  return scheduler_->ParseSubmitReply(argv, *r);
}

absl::StatusOr<SchedulerJobStatus> SchedulerClient::Query(const std::string& id,
                                                          const std::string& job_dir) {
  if (scheduler_ == nullptr) return UnknownScheduler();
  SchedulerJobStatus status = scheduler_text::NotInQueue();
  for (int step = 0;; ++step) {
    const std::vector<std::string> argv = scheduler_->StatusArgv(commands_, id, job_dir, step);
    if (argv.empty()) return status;
    absl::StatusOr<CommandResult> r = Run(argv);
    // Only the first query must answer; a later one is a best-effort second opinion.
    if (!r.ok()) return step == 0 ? absl::StatusOr<SchedulerJobStatus>(r.status()) : status;
    status = scheduler_->ParseStatus(step, *r, id, job_dir);
    if (status.state != "not_in_queue") return status;
  }
}

absl::Status SchedulerClient::Cancel(const std::string& id) {
  if (scheduler_ == nullptr) return UnknownScheduler();
  absl::StatusOr<std::vector<std::string>> argv = scheduler_->CancelArgv(commands_, id);
  if (!argv.ok()) return argv.status();
  absl::StatusOr<CommandResult> r = Run(*argv);
  if (!r.ok()) return r.status();
  return scheduler_->ParseCancelReply(*argv, *r);
}

}  // namespace dlaunch
