#include "launcher/submit/pbs_scheduler.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"
#include "launcher/submit/site_profile.h"

namespace dlaunch {
namespace {

std::string PbsStateName(const std::string& code) {
  if (code == "Q" || code == "W" || code == "T") return "queued";
  if (code == "H" || code == "S" || code == "U") return "held";
  if (code == "R" || code == "B") return "running";
  if (code == "E") return "exiting";
  if (code == "F" || code == "X") return "finished";
  return "unknown";
}

}  // namespace

SchedulerJobStatus ParsePbsQstat(const std::string& output) {
  SchedulerJobStatus s;
  s.state = "unknown";
  for (const auto& line : scheduler_text::Lines(output)) {
    std::vector<std::string> kv = absl::StrSplit(line, absl::MaxSplits('=', 1));
    if (kv.size() != 2) continue;
    std::string key(absl::StripAsciiWhitespace(kv[0]));
    std::string value(absl::StripAsciiWhitespace(kv[1]));
    if (key == "job_state") {
      s.raw_state = value;
      s.state = PbsStateName(value);
    } else if (key == "Exit_status") {
      s.exit_status = value;
    }
  }
  if (s.state == "finished" && !s.exit_status.empty() && s.exit_status != "0") {
    s.state = "failed";
  }
  return s;
}

std::string_view PbsScheduler::name() const { return "pbs"; }
std::string_view PbsScheduler::default_site() const { return "generic-pbs"; }

SchedulerCommands PbsScheduler::ResolveCommands(const SiteProfile* profile,
                                                const GetEnv& getenv) const {
  return scheduler_text::QsubFamilyCommands(profile, getenv);
}

std::vector<std::string> PbsScheduler::SubmitArgv(const SchedulerCommands& commands,
                                                  const std::string& script,
                                                  const std::string& job_dir) const {
  return {commands.submit, script};
}

absl::StatusOr<std::string> PbsScheduler::ParseSubmitOutput(const std::string& output) const {
  const std::vector<std::string> lines = scheduler_text::Lines(output);
  if (lines.empty()) return scheduler_text::NoJobId(name(), output);
  // The whole line (id.server) is what qstat and qdel accept.
  const std::string& id = lines[0];
  if (!absl::ascii_isdigit(static_cast<unsigned char>(id[0])) ||
      id.find_first_of(" \t") != std::string::npos) {
    return scheduler_text::NoJobId(name(), output);
  }
  return id;
}

std::vector<std::string> PbsScheduler::StatusArgv(const SchedulerCommands& commands,
                                                  const std::string& job_id,
                                                  const std::string& job_dir, int step) const {
  if (step > 0) return {};
  return {commands.status, "-fx", job_id};
}

SchedulerJobStatus PbsScheduler::ParseStatus(int step, const CommandResult& reply,
                                             const std::string& job_id,
                                             const std::string& job_dir) const {
  // qstat fails for ids the server no longer knows.
  if (reply.exit_code != 0) return scheduler_text::NotInQueue();
  return ParsePbsQstat(reply.out);
}

absl::StatusOr<std::vector<std::string>> PbsScheduler::CancelArgv(
    const SchedulerCommands& commands, const std::string& job_id) const {
  return std::vector<std::string>{commands.cancel, job_id};
}

}  // namespace dlaunch
