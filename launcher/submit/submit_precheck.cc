#include "launcher/submit/submit_precheck.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "launcher/submit/batch_script.h"

namespace dlaunch {
namespace fs = std::filesystem;
namespace {

std::string JoinPath(const std::string& base, const std::string& rel) {
  if (!rel.empty() && rel[0] == '/') return rel;
  if (base.empty()) return rel;
  return (fs::path(base) / rel).lexically_normal().string();
}

bool IsInterpreter(const std::string& program) {
  std::string base = fs::path(program).filename().string();
  return base == "python" || absl::StartsWith(base, "python3") || base == "bash" ||
         base == "sh" || base == "perl" || base == "Rscript";
}

bool LooksLikeScript(const std::string& arg) {
  return !absl::StartsWith(arg, "-") &&
         (absl::EndsWith(arg, ".py") || absl::EndsWith(arg, ".sh") || absl::EndsWith(arg, ".pl") ||
          absl::EndsWith(arg, ".R"));
}

void CheckCommand(const JobSpec& spec, const SiteProfile& profile, const std::string& cwd,
                  const std::string& path_env, const FileLookup& files, PrecheckReport* report) {
  if (spec.command.empty() || spec.command[0].empty()) {
    report->errors.push_back("command: no worker program given");
    return;
  }
  const std::string workdir = JoinPath(cwd, spec.workdir);
  const std::string& program = spec.command[0];
  if (absl::StrContains(program, "/")) {
    std::string path = JoinPath(workdir, program);
    if (!files.exists(path)) {
      report->errors.push_back(
          absl::StrCat("command: '", program, "' does not exist (looked at ", path, ")"));
    } else if (!files.is_executable(path)) {
      report->errors.push_back(absl::StrCat("command: '", path, "' is not executable"));
    }
  } else {
    bool found = false;
    for (absl::string_view dir : absl::StrSplit(path_env, ':', absl::SkipEmpty())) {
      if (files.is_executable(JoinPath(std::string(dir), program))) {
        found = true;
        break;
      }
    }
    if (!found) {
      bool job_changes_path = !spec.scheduler.modules.empty() || !spec.scheduler.setup.empty() ||
                              !profile.modules.empty() || !profile.setup.empty() ||
                              (IsPythonCommand(spec) && spec.scheduler.site_python_setup &&
                               !profile.python_setup.empty());
      std::string msg = absl::StrCat("command: '", program, "' is not on PATH");
      if (job_changes_path) {
        report->warnings.push_back(absl::StrCat(
            msg, " here; assuming the job's modules or setup lines provide it"));
      } else {
        report->errors.push_back(msg);
      }
    }
  }
  if (IsInterpreter(program) && spec.command.size() > 1 && LooksLikeScript(spec.command[1])) {
    std::string script = JoinPath(workdir, spec.command[1]);
    if (!files.exists(script)) {
      report->errors.push_back(absl::StrCat("command: script '", spec.command[1],
                                            "' does not exist (looked at ", script, ")"));
    }
  }
}

void CheckLimits(const JobSpec& spec, const SiteProfile& profile, const SiteLimits& limits,
                 const std::string& scope, int walltime_s, PrecheckReport* report) {
  if (limits.max_nodes > 0 && RequestedNodes(spec) > limits.max_nodes) {
    report->errors.push_back(absl::StrCat("nodes: ", RequestedNodes(spec), " requested",
                                          spec.spare_nodes > 0 ? " (spares included), " : ", ",
                                          scope, " allows at most ", limits.max_nodes));
  }
  if (limits.min_nodes > 0 && spec.max_nodes < limits.min_nodes) {
    report->errors.push_back(absl::StrCat("nodes: ", spec.max_nodes, " requested, ", scope,
                                          " needs at least ", limits.min_nodes));
  }
  if (limits.max_walltime_s > 0 && walltime_s > limits.max_walltime_s) {
    report->errors.push_back(absl::StrCat("scheduler.walltime: ", FormatWalltimeHms(walltime_s),
                                          " requested, ", scope, " allows at most ",
                                          FormatWalltimeHms(limits.max_walltime_s)));
  }
}

// A site whose directives can ask for GPUs, and a GPU job that gives no count: the job would
// ask for none, and a cluster that allots GPUs (Slurm GRES) would start it without any.
void CheckGpuRequest(const JobSpec& spec, const SiteProfile& profile, PrecheckReport* report) {
  const bool site_asks_for_gpus =
      std::any_of(profile.directives.begin(), profile.directives.end(),
                  [](const std::string& d) { return absl::StrContains(d, "gpus_per_node"); });
  if (!site_asks_for_gpus || spec.nproc_per_node != 0 || RequestedGpusPerNode(spec, profile) > 0) {
    return;
  }
  report->warnings.push_back(absl::StrCat(
      "nproc_per_node: gpu, but no GPU count is known (gpus.per_node in job.yaml, or "
      "defaults.gpus_per_node in site ", profile.name, "): the job asks the scheduler for no "
      "GPUs, and a cluster that allots them as a resource starts it on nodes without any"));
}

}  // namespace

FileLookup RealFileLookup() {
  FileLookup f;
  f.exists = [](const std::string& path) {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0;
  };
  f.is_executable = [](const std::string& path) {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
           ::access(path.c_str(), X_OK) == 0;
  };
  return f;
}

PrecheckReport PrecheckSubmit(const JobSpec& spec, const SiteProfile& profile,
                              const std::string& cwd, const std::string& path_env,
                              const FileLookup& files) {
  PrecheckReport report;
  CheckCommand(spec, profile, cwd, path_env, files, &report);
  if (!spec.scheduler.type.empty() && spec.scheduler.type != profile.scheduler) {
    report.errors.push_back(absl::StrCat("scheduler.type: '", spec.scheduler.type,
                                         "' but site '", profile.name, "' uses ",
                                         profile.scheduler));
  }
  if (spec.min_nodes < 1 || spec.max_nodes < spec.min_nodes) {
    report.errors.push_back(absl::StrCat("nodes: min ", spec.min_nodes, ", max ", spec.max_nodes,
                                         " is not a valid range"));
  }
  absl::StatusOr<ResolvedSchedulerSettings> sched = ResolveSchedulerSettings(spec, profile);
  if (!sched.ok()) {
    report.errors.push_back(std::string(sched.status().message()));
    return report;
  }
  const std::string site = absl::StrCat("site ", profile.name);
  CheckLimits(spec, profile, profile.limits, site, sched->walltime_s, &report);
  auto queue = profile.queue_limits.find(sched->queue);
  if (queue != profile.queue_limits.end()) {
    CheckLimits(spec, profile, queue->second,
                absl::StrCat("queue ", sched->queue, " on ", profile.name), sched->walltime_s,
                &report);
  }
  if (profile.requires_account && sched->account.empty()) {
    report.errors.push_back(absl::StrCat("scheduler.account: ", site,
                                         " requires a project account (e.g. account: MyProject)"));
  }
  if (profile.requires_queue && sched->queue.empty()) {
    report.errors.push_back(absl::StrCat("scheduler.queue: ", site, " requires a queue"));
  }
  CheckGpuRequest(spec, profile, &report);
  return report;
}

}  // namespace dlaunch
