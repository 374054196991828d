#include "launcher/submit/local_scheduler.h"

#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace dlaunch {
namespace {

// A local job id is the pid of the detached script; 0 and 1 are never ours.
bool LocalPid(const std::string& job_id, int* pid) {
  return absl::SimpleAtoi(job_id, pid) && *pid > 1;
}

}  // namespace

SchedulerJobStatus ParseLocalProcess(const std::string& output, const std::string& job_dir) {
  SchedulerJobStatus s = scheduler_text::NotInQueue();
  // /proc/PID/stat is one line: "PID (comm) STATE ..."; comm may hold spaces and parentheses.
  const size_t newline = output.find('\n');
  if (newline == std::string::npos) return s;
  const std::string stat = output.substr(0, newline);
  const std::string cmdline = output.substr(newline + 1);
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat.size()) return s;
  const char state = stat[paren + 2];
  if (state == 'Z' || cmdline.find(job_dir) == std::string::npos) return s;
  s.state = "running";
  s.raw_state = std::string(1, state);
  return s;
}

std::string_view LocalScheduler::name() const { return "local"; }
std::string_view LocalScheduler::default_site() const { return "local"; }

SchedulerCommands LocalScheduler::ResolveCommands(const SiteProfile* profile,
                                                  const GetEnv& getenv) const {
  return {};  // no scheduler programs: the script runs here
}

std::vector<std::string> LocalScheduler::SubmitArgv(const SchedulerCommands& commands,
                                                    const std::string& script,
                                                    const std::string& job_dir) const {
  return DetachedArgv({"/bin/bash", script}, absl::StrCat(job_dir, "/scheduler.out"));
}

absl::StatusOr<std::string> LocalScheduler::ParseSubmitOutput(const std::string& output) const {
  CommandResult reply;
  reply.out = output;
  absl::StatusOr<pid_t> pid = ParseDetachedPid(reply);
  if (!pid.ok()) return scheduler_text::NoJobId(name(), output);
  return std::to_string(*pid);
}

absl::StatusOr<std::string> LocalScheduler::ParseSubmitReply(const std::vector<std::string>& argv,
                                                             const CommandResult& reply) const {
  absl::StatusOr<pid_t> pid = ParseDetachedPid(reply);
  if (!pid.ok()) return pid.status();
  return std::to_string(*pid);
}

std::vector<std::string> LocalScheduler::StatusArgv(const SchedulerCommands& commands,
                                                    const std::string& job_id,
                                                    const std::string& job_dir, int step) const {
  int pid = 0;
  if (step > 0 || !LocalPid(job_id, &pid)) return {};
  return {"cat", absl::StrCat("/proc/", pid, "/stat"), absl::StrCat("/proc/", pid, "/cmdline")};
}

SchedulerJobStatus LocalScheduler::ParseStatus(int step, const CommandResult& reply,
                                               const std::string& job_id,
                                               const std::string& job_dir) const {
  if (reply.exit_code != 0) return scheduler_text::NotInQueue();  // no such process
  return ParseLocalProcess(reply.out, job_dir);
}

absl::StatusOr<std::vector<std::string>> LocalScheduler::CancelArgv(
    const SchedulerCommands& commands, const std::string& job_id) const {
  int pid = 0;
  if (!LocalPid(job_id, &pid)) {
    return absl::InvalidArgumentError(absl::StrCat("bad local job id '", job_id, "'"));
  }
  // SIGTERM to the script's process group (it leads one), else to the process alone. bash, which
  // runs local jobs anyway, because dash's kill cannot name a process group.
  return std::vector<std::string>{
      "/bin/bash", "-c", "kill -TERM -- -\"$1\" 2>/dev/null || kill -TERM \"$1\" 2>/dev/null",
      "bash", std::to_string(pid)};
}

absl::Status LocalScheduler::ParseCancelReply(const std::vector<std::string>& argv,
                                              const CommandResult& reply) const {
  if (reply.exit_code == 0) return absl::OkStatus();
  return absl::NotFoundError(absl::StrCat("process ", argv.back(), " is not running"));
}

}  // namespace dlaunch
