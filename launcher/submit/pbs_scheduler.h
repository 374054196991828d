// The Scheduler adapter for PBS Pro (qsub, qstat -fx, qdel).
#pragma once

#include "launcher/submit/scheduler.h"

namespace dlaunch {

class PbsScheduler : public Scheduler {
 public:
  std::string_view name() const override;
  std::string_view default_site() const override;
  SchedulerCommands ResolveCommands(const SiteProfile* profile,
                                    const GetEnv& getenv) const override;
  std::vector<std::string> SubmitArgv(const SchedulerCommands& commands, const std::string& script,
                                      const std::string& job_dir) const override;
  absl::StatusOr<std::string> ParseSubmitOutput(const std::string& output) const override;
  std::vector<std::string> StatusArgv(const SchedulerCommands& commands, const std::string& job_id,
                                      const std::string& job_dir, int step) const override;
  SchedulerJobStatus ParseStatus(int step, const CommandResult& reply, const std::string& job_id,
                                 const std::string& job_dir) const override;
  absl::StatusOr<std::vector<std::string>> CancelArgv(const SchedulerCommands& commands,
                                                      const std::string& job_id) const override;
};

}  // namespace dlaunch
