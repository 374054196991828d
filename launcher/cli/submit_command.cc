#include "launcher/cli/submit_command.h"

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <random>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/environment.h"
#include "common/exit_codes.h"
#include "common/file_io.h"
#include "launcher/cli/cli_support.h"
#include "launcher/jobdir/job_index.h"
#include "launcher/jobdir/job_record.h"
#include "launcher/spec/job_spec_parser.h"
#include "launcher/submit/batch_script.h"
#include "launcher/submit/scheduler_client.h"
#include "launcher/submit/site_profile.h"
#include "launcher/submit/submit_precheck.h"
#include "launcher/submit/submitted_job_directory.h"

namespace dlaunch {
namespace fs = std::filesystem;
namespace {

constexpr char kScriptUsage[] =
    "usage: dlaunch script JOB.yaml [--site NAME]\n"
    "  Prints the batch script `dlaunch submit` would submit; writes nothing.\n"
    "  --site NAME   site profile (default: scheduler.site in the job, else by scheduler.type)\n";
constexpr char kSubmitUsage[] =
    "usage: dlaunch submit JOB.yaml [--site NAME] [--dry-run]\n"
    "  Checks the job against the site, writes runs/<job-id>/ (job.sh, job.yaml, submit.json),\n"
    "  submits job.sh and prints the job id.\n"
    "  --site NAME   site profile (default: scheduler.site in the job, else by scheduler.type)\n"
    "  --dry-run     write the job directory but do not submit\n";
// The dlaunch executable compute nodes run: $DLAUNCH_BIN when set (tests, wrappers), else this
// process's own executable.
std::string DlaunchBinary() {
  const char* bin = std::getenv("DLAUNCH_BIN");
  if (bin != nullptr && bin[0] != '\0') return AbsolutePath(bin);
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("dlaunch") : exe.string();
}

struct ScriptArgs {
  std::string spec_path;
  std::string site;
  bool dry_run = false;
};

// JOB.yaml [--site NAME] [--dry-run]; false (with the exit code) after printing the problem.
bool ParseScriptArgs(const std::vector<std::string>& args, bool allow_dry_run, const char* usage,
                     ScriptArgs* out, int* exit_code) {
  std::vector<Flag> table = {{{"--site"}, true, StringFlag("--site", &out->site)}};
  if (allow_dry_run) table.push_back({{"--dry-run"}, false, SwitchFlag(&out->dry_run)});
  ParsedArgs parsed;
  if (!ParseCommandFlags(args, table, 1, usage, &parsed, exit_code)) return false;
  if (parsed.positional.empty()) {
    *exit_code = UsageError(usage, "no job file given");
    return false;
  }
  out->spec_path = parsed.positional[0];
  return true;
}

// A job made ready for the scheduler: spec, profile, id, directory and the rendered script.
struct PreparedJob {
  JobSpec spec;
  SiteProfile profile;
  RenderContext ctx;
  std::string script;
};

// Loads spec and profile and renders; on failure prints the problems and returns the exit code.
int PrepareJob(const ScriptArgs& args, PreparedJob* job, bool run_prechecks) {
  absl::StatusOr<JobSpec> spec = LoadJobSpec(args.spec_path);
  if (!spec.ok()) {
    std::cerr << spec.status().message() << "\n";
    return kExitUsage;
  }
  job->spec = *std::move(spec);
  std::string site = args.site.empty()
                         ? DefaultSiteName(job->spec.scheduler.site, job->spec.scheduler.type)
                         : args.site;
  absl::StatusOr<SiteProfile> profile = LoadSiteProfile(site, DefaultSiteSearchPath());
  if (!profile.ok()) {
    std::cerr << "dlaunch: " << profile.status().message() << "\n";
    return kExitUsage;
  }
  job->profile = *std::move(profile);
  // The site's GPU binding (ALCF advises one GPU per rank on Polaris and ThetaGPU) applies
  // unless job.yaml chose one itself.
  if (!job->spec.gpu_binding_given && !job->profile.gpu_binding.empty()) {
    job->spec.isolate_gpus = job->profile.gpu_binding == "isolate";
  }

  std::error_code ec;
  std::string cwd = fs::current_path(ec).string();
  const char* env_root = std::getenv("DLAUNCH_JOB_ROOT");
  std::string root = (env_root != nullptr && env_root[0] != '\0') ? env_root : job->spec.job_root;
  if (root.empty()) root = "runs";
  std::random_device rd;
  job->ctx.job_id = MakeJobId(job->spec.name, absl::Now(), rd());
  job->ctx.job_dir = AbsolutePath((fs::path(root) / job->ctx.job_id).string());
  job->ctx.resolved_spec_path = job->ctx.job_dir + "/job.yaml";
  job->ctx.dlaunch_binary = DlaunchBinary();
  job->ctx.submit_cwd = cwd;

  std::vector<std::string> errors;
  if (run_prechecks) {
    const char* path_env = std::getenv("PATH");
    PrecheckReport report = PrecheckSubmit(job->spec, job->profile, cwd,
                                           path_env ? path_env : "", RealFileLookup());
    for (const auto& w : report.warnings) std::cerr << args.spec_path << ": warning: " << w << "\n";
    errors = report.errors;
  }
  absl::StatusOr<std::string> script = RenderBatchScript(job->spec, job->profile, job->ctx);
  if (!script.ok()) {
    errors.push_back(std::string(script.status().message()));
  } else {
    job->script = *std::move(script);
  }
  if (!errors.empty()) {
    std::cerr << args.spec_path << ": the job cannot be submitted to site " << job->profile.name
              << ":\n";
    for (const auto& e : errors) std::cerr << "  " << e << "\n";
    return kExitUsage;
  }
  return kExitOk;
}

}  // namespace

int RunScriptCommand(const std::vector<std::string>& args) {
  if (WantsHelp(args)) {
    std::cout << kScriptUsage;
    return kExitOk;
  }
  ScriptArgs parsed;
  if (int rc; !ParseScriptArgs(args, /*allow_dry_run=*/false, kScriptUsage, &parsed, &rc)) return rc;
  PreparedJob job;
  int rc = PrepareJob(parsed, &job, /*run_prechecks=*/false);
  if (rc != kExitOk) return rc;
  std::cout << job.script;
  return kExitOk;
}

int RunSubmitCommand(const std::vector<std::string>& args) {
  if (WantsHelp(args)) {
    std::cout << kSubmitUsage;
    return kExitOk;
  }
  ScriptArgs parsed;
  if (int rc; !ParseScriptArgs(args, /*allow_dry_run=*/true, kSubmitUsage, &parsed, &rc)) return rc;
  PreparedJob job;
  int rc = PrepareJob(parsed, &job, /*run_prechecks=*/true);
  if (rc != kExitOk) return rc;

  absl::StatusOr<SubmittedJobDirectory> dir = SubmittedJobDirectory::Create(job.ctx.job_dir);
  if (!dir.ok()) {
    std::cerr << "dlaunch: " << dir.status().message() << "\n";
    return kExitLaunchError;
  }
  (void)JobIndex(JobIndex::DefaultRoot()).Record(job.ctx.job_id, job.ctx.job_dir);
  if (absl::Status st = dir->WriteJob(ResolvedJobYaml(job.spec), job.script); !st.ok()) {
    std::cerr << "dlaunch: " << st.message() << "\n";
    return kExitLaunchError;
  }
  const std::string script_path = dir->script_path();
  SubmitRecord record;
  record.job_id = job.ctx.job_id;
  record.scheduler = job.profile.scheduler;
  record.site = job.profile.name;
  record.cwd = job.ctx.submit_cwd;
  record.spec_source = AbsolutePath(parsed.spec_path);
  record.submit_time = absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone());
  record.dry_run = parsed.dry_run;

  int exit_code = kExitOk;
  if (!parsed.dry_run) {
    SchedulerClient client(job.profile.scheduler,
                           ResolveSchedulerCommands(job.profile.scheduler, &job.profile,
                                                    ProcessEnvironment()),
                           RealCommandRunner());
    absl::StatusOr<std::string> id = client.Submit(script_path, job.ctx.job_dir);
    if (!id.ok()) {
      std::cerr << "dlaunch: submitting " << script_path << " failed: " << id.status().message()
                << "\n";
      exit_code = kExitLaunchError;
    } else {
      record.scheduler_job_id = *id;
    }
  }
  absl::Status st = dir->WriteSubmitRecord(SubmitRecordToJson(record));
  if (!st.ok()) {
    std::cerr << "dlaunch: " << st.message() << "\n";
    return kExitLaunchError;
  }
  if (exit_code != kExitOk) return exit_code;
  if (parsed.dry_run) {
    std::cerr << "dry run: " << job.ctx.job_dir << " written, not submitted ("
              << job.profile.scheduler << " script: " << script_path << ")\n";
  } else {
    std::cerr << "submitted to " << job.profile.name << " as " << job.profile.scheduler
              << " job " << record.scheduler_job_id << "; job directory " << job.ctx.job_dir
              << "\n";
  }
  std::cout << job.ctx.job_id << "\n";
  return kExitOk;
}

}  // namespace dlaunch
