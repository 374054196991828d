#include "launcher/submit/cobalt_scheduler.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "launcher/submit/site_profile.h"

namespace dlaunch {
namespace {

std::string CobaltStateName(const std::string& st) {
  if (st == "queued" || st == "starting") return "queued";
  if (absl::EndsWith(st, "hold")) return "held";
  if (st == "running") return "running";
  if (st == "exiting" || st == "killing") return "exiting";
  return "unknown";
}

}  // namespace

SchedulerJobStatus ParseCobaltQstat(const std::string& output, const std::string& job_id) {
  SchedulerJobStatus s = scheduler_text::NotInQueue();
  int state_col = -1;
  for (const auto& line : scheduler_text::Lines(output)) {
    std::vector<std::string> cols = absl::StrSplit(line, ' ', absl::SkipWhitespace());
    if (state_col < 0) {
      for (size_t i = 0; i < cols.size(); ++i) {
        if (cols[i] == "State") state_col = static_cast<int>(i);
      }
      continue;
    }
    if (cols.empty() || cols[0] != job_id || static_cast<int>(cols.size()) <= state_col) continue;
    s.raw_state = cols[state_col];
    s.state = CobaltStateName(s.raw_state);
  }
  return s;
}

std::string_view CobaltScheduler::name() const { return "cobalt"; }
std::string_view CobaltScheduler::default_site() const { return "thetagpu"; }

SchedulerCommands CobaltScheduler::ResolveCommands(const SiteProfile* profile,
                                                   const GetEnv& getenv) const {
  return scheduler_text::QsubFamilyCommands(profile, getenv);
}

std::vector<std::string> CobaltScheduler::SubmitArgv(const SchedulerCommands& commands,
                                                     const std::string& script,
                                                     const std::string& job_dir) const {
  return {commands.submit, script};
}

absl::StatusOr<std::string> CobaltScheduler::ParseSubmitOutput(const std::string& output) const {
  // qsub talks first ("Job routed to queue ..."); the id is the last line that is a number.
  const std::vector<std::string> lines = scheduler_text::Lines(output);
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    int64_t n = 0;
    if (absl::SimpleAtoi(*it, &n) && n > 0) return *it;
  }
  return scheduler_text::NoJobId(name(), output);
}

std::vector<std::string> CobaltScheduler::StatusArgv(const SchedulerCommands& commands,
                                                     const std::string& job_id,
                                                     const std::string& job_dir, int step) const {
  if (step > 0) return {};
  return {commands.status, job_id};
}

SchedulerJobStatus CobaltScheduler::ParseStatus(int step, const CommandResult& reply,
                                                const std::string& job_id,
                                                const std::string& job_dir) const {
  // Cobalt's qstat lists what it knows whatever its exit code; a missing row is the answer.
  return ParseCobaltQstat(reply.out, job_id);
}

absl::StatusOr<std::vector<std::string>> CobaltScheduler::CancelArgv(
    const SchedulerCommands& commands, const std::string& job_id) const {
  return std::vector<std::string>{commands.cancel, job_id};
}

}  // namespace dlaunch
