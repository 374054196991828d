#include "launcher/submit/scheduler.h"

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "launcher/submit/cobalt_scheduler.h"
#include "launcher/submit/local_scheduler.h"
#include "launcher/submit/pbs_scheduler.h"
#include "launcher/submit/slurm_scheduler.h"
#include "launcher/submit/site_profile.h"

namespace dlaunch {

absl::StatusOr<std::string> Scheduler::ParseSubmitReply(const std::vector<std::string>& argv,
                                                        const CommandResult& reply) const {
  if (reply.exit_code != 0) {
    return absl::UnavailableError(absl::StrCat(absl::StrJoin(argv, " "), " failed (exit ",
                                               reply.exit_code,
                                               "): ", absl::StripAsciiWhitespace(reply.err),
                                               absl::StripAsciiWhitespace(reply.out)));
  }
  return ParseSubmitOutput(reply.out);
}

absl::Status Scheduler::ParseCancelReply(const std::vector<std::string>& argv,
                                         const CommandResult& reply) const {
  if (reply.exit_code == 0) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat(absl::StrJoin(argv, " "), " failed (exit ",
                                             reply.exit_code,
                                             "): ", absl::StripAsciiWhitespace(reply.err)));
}

const Scheduler* FindScheduler(std::string_view name) {
  static const PbsScheduler pbs;
  static const CobaltScheduler cobalt;
  static const SlurmScheduler slurm;
  static const LocalScheduler local;
  for (const Scheduler* s : {static_cast<const Scheduler*>(&pbs),
                             static_cast<const Scheduler*>(&cobalt),
                             static_cast<const Scheduler*>(&slurm),
                             static_cast<const Scheduler*>(&local)}) {
    if (s->name() == name) return s;
  }
  return nullptr;
}

namespace scheduler_text {

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  for (absl::string_view l : absl::StrSplit(text, '\n')) {
    std::string s(absl::StripAsciiWhitespace(l));
    if (!s.empty()) out.push_back(s);
  }
  return out;
}

std::string Pick(const std::optional<std::string>& env, const std::string& profile_value,
                 const char* fallback) {
  if (env.has_value() && !env->empty()) return *env;
  if (!profile_value.empty()) return profile_value;
  return fallback;
}

absl::Status NoJobId(std::string_view scheduler, const std::string& output) {
  return absl::UnavailableError(absl::StrCat("could not find a job id in the ",
                                             std::string(scheduler), " submit output: \"",
                                             absl::CHexEscape(output), "\""));
}

SchedulerCommands QsubFamilyCommands(const SiteProfile* profile, const GetEnv& getenv) {
  const SiteProfile empty;
  const SiteProfile& p = profile != nullptr ? *profile : empty;
  SchedulerCommands c;
  c.submit = Pick(getenv("DLAUNCH_QSUB"), p.submit_command, "qsub");
  c.status = Pick(getenv("DLAUNCH_QSTAT"), p.status_command, "qstat");
  c.cancel = Pick(getenv("DLAUNCH_QDEL"), p.cancel_command, "qdel");
  return c;
}

SchedulerJobStatus NotInQueue() {
  SchedulerJobStatus s;
  s.state = "not_in_queue";
  return s;
}

}  // namespace scheduler_text
}  // namespace dlaunch
