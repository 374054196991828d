#include "launcher/cli/submit_commands.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <thread>
#include <tuple>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "launcher/submit/batch_script.h"
#include "launcher/jobdir/job_record.h"
#include "launcher/spec/job_spec_parser.h"
#include "launcher/submit/scheduler_client.h"
#include "launcher/submit/site_profile.h"
#include "launcher/submit/submit_precheck.h"

namespace dlaunch {
namespace fs = std::filesystem;
namespace {

constexpr int kExitOk = 0;
constexpr int kExitUsage = 2;
constexpr int kExitScheduler = 3;
constexpr int kRecentJobs = 20;
constexpr int kStatusEvents = 10;

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
constexpr char kStatusUsage[] =
    "usage: dlaunch status [JOB]\n"
    "  JOB is a job id under $DLAUNCH_JOB_ROOT (default runs/) or a job directory.\n"
    "  Without JOB, lists recent jobs.\n";
constexpr char kLogsUsage[] =
    "usage: dlaunch logs JOB [--rank N] [--follow]\n"
    "  Prints runs/JOB/logs/rank-N.log; all ranks, each line prefixed, without --rank.\n"
    "  --follow   keep printing new lines until the job finishes (Ctrl-C stops)\n";
constexpr char kCancelUsage[] =
    "usage: dlaunch cancel JOB\n"
    "  Cancels the scheduler job (qdel / scancel) and stops the job's launcher.\n";

int Usage(const char* usage, const std::string& problem) {
  if (!problem.empty()) std::cerr << "dlaunch: " << problem << "\n";
  std::cerr << usage;
  return kExitUsage;
}

bool IsHelp(const std::string& a) { return a == "-h" || a == "--help"; }

std::string Absolute(const std::string& path) {
  std::error_code ec;
  return fs::absolute(path, ec).lexically_normal().string();
}

// The dlaunch executable compute nodes run: $DLAUNCH_BIN when set (tests, wrappers), else this
// process's own executable.
std::string DlaunchBinary() {
  const char* bin = std::getenv("DLAUNCH_BIN");
  if (bin != nullptr && bin[0] != '\0') return Absolute(bin);
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("dlaunch") : exe.string();
}

struct ScriptArgs {
  std::string spec_path;
  std::string site;
  bool dry_run = false;
};

// Parses JOB.yaml [--site NAME] [--dry-run]; returns "" or the problem.
std::string ParseScriptArgs(const std::vector<std::string>& args, bool allow_dry_run,
                            ScriptArgs* out) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--site") {
      if (i + 1 >= args.size()) return "--site needs a profile name";
      out->site = args[++i];
    } else if (absl::StartsWith(a, "--site=")) {
      out->site = a.substr(7);
    } else if (allow_dry_run && a == "--dry-run") {
      out->dry_run = true;
    } else if (absl::StartsWith(a, "-")) {
      return absl::StrCat("unknown option '", a, "'");
    } else if (out->spec_path.empty()) {
      out->spec_path = a;
    } else {
      return absl::StrCat("unexpected argument '", a, "'");
    }
  }
  if (out->spec_path.empty()) return "no job file given";
  return "";
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

  std::error_code ec;
  std::string cwd = fs::current_path(ec).string();
  const char* env_root = std::getenv("DLAUNCH_JOB_ROOT");
  std::string root = (env_root != nullptr && env_root[0] != '\0') ? env_root : job->spec.job_root;
  if (root.empty()) root = "runs";
  std::random_device rd;
  job->ctx.job_id = MakeJobId(job->spec.name, absl::Now(), rd());
  job->ctx.job_dir = Absolute((fs::path(root) / job->ctx.job_id).string());
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

absl::StatusOr<SubmitRecord> LoadRecord(const std::string& job_dir) {
  absl::StatusOr<std::string> text = ReadTextFile(job_dir + "/submit.json");
  if (!text.ok()) return text.status();
  return ParseSubmitRecord(*text);
}

// The job's profile if it can still be found (for command overrides), else null.
std::unique_ptr<SiteProfile> TryLoadProfile(const std::string& site) {
  if (site.empty()) return nullptr;
  absl::StatusOr<SiteProfile> p = LoadSiteProfile(site, DefaultSiteSearchPath());
  return p.ok() ? std::make_unique<SiteProfile>(*std::move(p)) : nullptr;
}

SchedulerClient ClientFor(const SubmitRecord& record) {
  std::unique_ptr<SiteProfile> profile = TryLoadProfile(record.site);
  return SchedulerClient(record.scheduler,
                         ResolveSchedulerCommands(record.scheduler, profile.get(),
                                                  [](const char* n) { return std::getenv(n); }),
                         RealCommandRunner());
}

// dlaunch's own view of a job from its directory: "finished (exit 0)", "running: ...".
std::string LauncherView(const std::string& job_dir, std::vector<JobEvent>* events_out) {
  absl::StatusOr<std::string> events_text = ReadTextFile(job_dir + "/events.jsonl");
  int bad = 0;
  std::vector<JobEvent> events =
      events_text.ok() ? ParseEvents(*events_text, &bad) : std::vector<JobEvent>{};
  if (events_out != nullptr) *events_out = events;
  absl::StatusOr<std::string> summary_text = ReadTextFile(job_dir + "/summary.json");
  if (summary_text.ok()) {
    auto summary = ParseJsonObjectFields(*summary_text);
    if (summary.ok()) {
      std::string state = summary->count("result")   ? summary->at("result")
                          : summary->count("status") ? summary->at("status")
                                                     : "finished";
      if (summary->count("exit_code")) absl::StrAppend(&state, " (exit ", summary->at("exit_code"), ")");
      return state;
    }
  }
  if (events.empty()) return events_text.ok() ? "started, no events yet" : "not started";
  int joined = 0, failed = 0, lost = 0;
  std::string last;
  for (const auto& e : events) {
    if (e.event == "node_joined") ++joined;
    if (e.event == "worker_failed") ++failed;
    if (e.event == "node_lost") ++lost;
    last = e.event;
  }
  if (last == "job_finished") return "finished";
  std::string view =
      absl::StrCat("running: ", joined, " node(s) joined, ", failed, " worker failure(s)");
  if (lost > 0) absl::StrAppend(&view, ", ", lost, " node(s) lost");
  return view;
}

}  // namespace

int RunScriptCommand(const std::vector<std::string>& args) {
  for (const auto& a : args) {
    if (IsHelp(a)) {
      std::cout << kScriptUsage;
      return kExitOk;
    }
  }
  ScriptArgs parsed;
  std::string problem = ParseScriptArgs(args, /*allow_dry_run=*/false, &parsed);
  if (!problem.empty()) return Usage(kScriptUsage, problem);
  PreparedJob job;
  int rc = PrepareJob(parsed, &job, /*run_prechecks=*/false);
  if (rc != kExitOk) return rc;
  std::cout << job.script;
  return kExitOk;
}

int RunSubmitCommand(const std::vector<std::string>& args) {
  for (const auto& a : args) {
    if (IsHelp(a)) {
      std::cout << kSubmitUsage;
      return kExitOk;
    }
  }
  ScriptArgs parsed;
  std::string problem = ParseScriptArgs(args, /*allow_dry_run=*/true, &parsed);
  if (!problem.empty()) return Usage(kSubmitUsage, problem);
  PreparedJob job;
  int rc = PrepareJob(parsed, &job, /*run_prechecks=*/true);
  if (rc != kExitOk) return rc;

  std::error_code ec;
  fs::create_directories(job.ctx.job_dir + "/logs", ec);
  if (ec) {
    std::cerr << "dlaunch: cannot create " << job.ctx.job_dir << ": " << ec.message() << "\n";
    return kExitScheduler;
  }
  const std::string script_path = job.ctx.job_dir + "/job.sh";
  for (const auto& [path, text, mode] :
       std::vector<std::tuple<std::string, std::string, int>>{
           {job.ctx.resolved_spec_path, ResolvedJobYaml(job.spec), 0644},
           {script_path, job.script, 0755}}) {
    absl::Status st = WriteTextFile(path, text, mode);
    if (!st.ok()) {
      std::cerr << "dlaunch: " << st.message() << "\n";
      return kExitScheduler;
    }
  }
  SubmitRecord record;
  record.job_id = job.ctx.job_id;
  record.scheduler = job.profile.scheduler;
  record.site = job.profile.name;
  record.cwd = job.ctx.submit_cwd;
  record.spec_source = Absolute(parsed.spec_path);
  record.submit_time = absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone());
  record.dry_run = parsed.dry_run;

  int exit_code = kExitOk;
  if (!parsed.dry_run) {
    SchedulerClient client(job.profile.scheduler,
                           ResolveSchedulerCommands(job.profile.scheduler, &job.profile,
                                                    [](const char* n) { return std::getenv(n); }),
                           RealCommandRunner());
    absl::StatusOr<std::string> id = client.Submit(script_path, job.ctx.job_dir);
    if (!id.ok()) {
      std::cerr << "dlaunch: submitting " << script_path << " failed: " << id.status().message()
                << "\n";
      exit_code = kExitScheduler;
    } else {
      record.scheduler_job_id = *id;
    }
  }
  absl::Status st = WriteTextFile(job.ctx.job_dir + "/submit.json", SubmitRecordToJson(record));
  if (!st.ok()) {
    std::cerr << "dlaunch: " << st.message() << "\n";
    return kExitScheduler;
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

int RunStatusCommand(const std::vector<std::string>& args) {
  std::string job_arg;
  for (const auto& a : args) {
    if (IsHelp(a)) {
      std::cout << kStatusUsage;
      return kExitOk;
    }
    if (absl::StartsWith(a, "-")) return Usage(kStatusUsage, absl::StrCat("unknown option '", a, "'"));
    if (!job_arg.empty()) return Usage(kStatusUsage, absl::StrCat("unexpected argument '", a, "'"));
    job_arg = a;
  }
  const std::string root = DefaultJobRoot();
  if (job_arg.empty()) {
    std::vector<std::string> dirs = ListJobDirs(root);
    if (dirs.empty()) {
      std::cout << "no jobs in " << root << "\n";
      return kExitOk;
    }
    std::cout << "JOB\tSITE\tSCHEDULER JOB\tSUBMITTED\tSTATE\n";
    int shown = 0;
    for (const auto& dir : dirs) {
      if (shown++ == kRecentJobs) break;
      absl::StatusOr<SubmitRecord> rec = LoadRecord(dir);
      std::string id = fs::path(dir).filename().string();
      std::cout << id << "\t" << (rec.ok() ? rec->site : "-") << "\t"
                << (rec.ok() && !rec->scheduler_job_id.empty()
                        ? rec->scheduler_job_id
                        : (rec.ok() && rec->dry_run ? "(dry run)" : "-"))
                << "\t" << (rec.ok() ? rec->submit_time : "-") << "\t"
                << LauncherView(dir, nullptr) << "\n";
    }
    return kExitOk;
  }
  absl::StatusOr<std::string> dir = ResolveJobDir(job_arg, root);
  if (!dir.ok()) {
    std::cerr << "dlaunch: " << dir.status().message() << "\n";
    return kExitUsage;
  }
  std::cout << "job        " << fs::path(*dir).filename().string() << "\n";
  std::cout << "directory  " << *dir << "\n";
  absl::StatusOr<SubmitRecord> rec = LoadRecord(*dir);
  int exit_code = kExitOk;
  if (rec.ok()) {
    std::cout << "site       " << rec->site << " (" << rec->scheduler << ")\n";
    std::cout << "submitted  " << rec->submit_time << " from " << rec->cwd << "\n";
    if (rec->dry_run) {
      std::cout << "scheduler  not submitted (dry run)\n";
    } else if (rec->scheduler_job_id.empty()) {
      std::cout << "scheduler  submission failed\n";
    } else {
      SchedulerClient client = ClientFor(*rec);
      absl::StatusOr<SchedulerJobStatus> s = client.Query(rec->scheduler_job_id, *dir);
      if (!s.ok()) {
        std::cout << "scheduler  job " << rec->scheduler_job_id << ": cannot ask ("
                  << s.status().message() << ")\n";
        exit_code = kExitScheduler;
      } else {
        std::cout << "scheduler  job " << rec->scheduler_job_id << ": " << s->state;
        if (!s->raw_state.empty()) std::cout << " (" << s->raw_state << ")";
        if (!s->exit_status.empty()) std::cout << ", exit status " << s->exit_status;
        std::cout << "\n";
      }
    }
  }
  std::vector<JobEvent> events;
  std::cout << "dlaunch    " << LauncherView(*dir, &events) << "\n";
  if (!events.empty()) {
    std::cout << "events:\n";
    size_t first = events.size() > kStatusEvents ? events.size() - kStatusEvents : 0;
    for (size_t i = first; i < events.size(); ++i) {
      std::cout << "  " << events[i].time << "  " << events[i].event;
      for (const auto& [k, v] : events[i].fields) std::cout << " " << k << "=" << v;
      std::cout << "\n";
    }
  }
  absl::StatusOr<std::string> summary_text = ReadTextFile(*dir + "/summary.json");
  if (summary_text.ok()) {
    auto summary = ParseJsonObjectFields(*summary_text);
    if (summary.ok()) {
      std::cout << "summary:\n";
      for (const auto& [k, v] : *summary) std::cout << "  " << k << ": " << v << "\n";
    }
  }
  return exit_code;
}

namespace {

// Rank logs present in <dir>/logs, by rank number.
std::map<int, std::string> RankLogs(const std::string& job_dir) {
  std::map<int, std::string> logs;
  std::error_code ec;
  for (fs::directory_iterator it(job_dir + "/logs", ec), end; !ec && it != end;
       it.increment(ec)) {
    std::string name = it->path().filename().string();
    absl::string_view v(name);
    int rank = 0;
    if (absl::ConsumePrefix(&v, "rank-") && absl::ConsumeSuffix(&v, ".log") &&
        absl::SimpleAtoi(v, &rank)) {
      logs[rank] = it->path().string();
    }
  }
  return logs;
}

// True when launcher.json names a process on this host that no longer exists.
bool LauncherGoneHere(const std::string& job_dir) {
  absl::StatusOr<std::string> text = ReadTextFile(job_dir + "/launcher.json");
  if (!text.ok()) return false;
  absl::StatusOr<LauncherInfo> info = ParseLauncherInfo(*text);
  if (!info.ok()) return false;
  char host[256] = {0};
  ::gethostname(host, sizeof(host) - 1);
  if (!info->host.empty() && info->host != host) return false;
  return ::kill(info->pid, 0) != 0 && errno == ESRCH;
}

// Prints the complete lines of `path` past `*offset` (prefixed), advancing the offset.
void PrintNewLines(const std::string& path, const std::string& prefix, std::streamoff* offset) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return;
  in.seekg(*offset);
  std::string line;
  while (std::getline(in, line)) {
    if (in.eof()) break;  // a partial last line: wait for its newline
    std::cout << prefix << line << "\n";
    *offset += static_cast<std::streamoff>(line.size()) + 1;
  }
  std::cout.flush();
}

}  // namespace

int RunLogsCommand(const std::vector<std::string>& args) {
  std::string job_arg;
  int rank = -1;
  bool follow = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (IsHelp(a)) {
      std::cout << kLogsUsage;
      return kExitOk;
    } else if (a == "--rank" || absl::StartsWith(a, "--rank=")) {
      std::string v;
      if (a == "--rank") {
        if (i + 1 >= args.size()) return Usage(kLogsUsage, "--rank needs a number");
        v = args[++i];
      } else {
        v = a.substr(7);
      }
      if (!absl::SimpleAtoi(v, &rank) || rank < 0) {
        return Usage(kLogsUsage, absl::StrCat("--rank: '", v, "' is not a rank number"));
      }
    } else if (a == "--follow" || a == "-f") {
      follow = true;
    } else if (absl::StartsWith(a, "-")) {
      return Usage(kLogsUsage, absl::StrCat("unknown option '", a, "'"));
    } else if (job_arg.empty()) {
      job_arg = a;
    } else {
      return Usage(kLogsUsage, absl::StrCat("unexpected argument '", a, "'"));
    }
  }
  if (job_arg.empty()) return Usage(kLogsUsage, "no job given");
  absl::StatusOr<std::string> dir = ResolveJobDir(job_arg, DefaultJobRoot());
  if (!dir.ok()) {
    std::cerr << "dlaunch: " << dir.status().message() << "\n";
    return kExitUsage;
  }
  std::map<std::string, std::streamoff> offsets;
  auto print_all = [&]() {
    std::map<int, std::string> logs = RankLogs(*dir);
    for (const auto& [r, path] : logs) {
      if (rank >= 0 && r != rank) continue;
      PrintNewLines(path, rank >= 0 ? "" : absl::StrCat("[rank ", r, "] "), &offsets[path]);
    }
    return logs;
  };
  std::map<int, std::string> logs = print_all();
  if (!follow) {
    if (rank >= 0 && !logs.count(rank)) {
      std::cerr << "dlaunch: no log for rank " << rank << " in " << *dir << "/logs\n";
      return kExitUsage;
    }
    if (logs.empty()) std::cerr << "dlaunch: no rank logs yet in " << *dir << "/logs\n";
    return kExitOk;
  }
  // Follow until the launcher has written its summary, or until a launcher known to run here
  // is gone without one (killed); a final pass picks up the last lines.
  while (!fs::exists(*dir + "/summary.json") && !LauncherGoneHere(*dir)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    print_all();
  }
  print_all();
  return kExitOk;
}

int RunCancelCommand(const std::vector<std::string>& args) {
  std::string job_arg;
  for (const auto& a : args) {
    if (IsHelp(a)) {
      std::cout << kCancelUsage;
      return kExitOk;
    }
    if (absl::StartsWith(a, "-")) return Usage(kCancelUsage, absl::StrCat("unknown option '", a, "'"));
    if (!job_arg.empty()) return Usage(kCancelUsage, absl::StrCat("unexpected argument '", a, "'"));
    job_arg = a;
  }
  if (job_arg.empty()) return Usage(kCancelUsage, "no job given");
  absl::StatusOr<std::string> dir = ResolveJobDir(job_arg, DefaultJobRoot());
  if (!dir.ok()) {
    std::cerr << "dlaunch: " << dir.status().message() << "\n";
    return kExitUsage;
  }
  bool acted = false;
  bool scheduler_failed = false;
  absl::StatusOr<SubmitRecord> rec = LoadRecord(*dir);
  if (rec.ok() && !rec->scheduler_job_id.empty()) {
    SchedulerClient client = ClientFor(*rec);
    absl::Status st = client.Cancel(rec->scheduler_job_id);
    if (st.ok()) {
      std::cout << "cancelled " << rec->scheduler << " job " << rec->scheduler_job_id << "\n";
      acted = true;
    } else {
      std::cerr << "dlaunch: cancelling " << rec->scheduler << " job " << rec->scheduler_job_id
                << ": " << st.message() << "\n";
      scheduler_failed = rec->scheduler != "local";
    }
  }
  // Without a scheduler job to cancel (an interactive `dlaunch run`, or a scheduler that
  // refused), SIGTERM the launcher itself when it runs here; it stops its agents and workers.
  // Not both: the scheduler's cancel already signals the launcher, and a second SIGTERM tells
  // it to skip the stop grace period.
  absl::StatusOr<std::string> info_text = ReadTextFile(*dir + "/launcher.json");
  if (!acted && info_text.ok() && !fs::exists(*dir + "/summary.json")) {
    absl::StatusOr<LauncherInfo> info = ParseLauncherInfo(*info_text);
    char host[256] = {0};
    ::gethostname(host, sizeof(host) - 1);
    if (info.ok() && (info->host.empty() || info->host == host)) {
      if (::kill(info->pid, SIGTERM) == 0) {
        std::cout << "sent SIGTERM to launcher pid " << info->pid << "\n";
        acted = true;
      }
    } else if (info.ok()) {
      std::cout << "launcher runs on " << info->host << " (" << info->address
                << "); the scheduler's cancel stops it\n";
    }
  }
  if (scheduler_failed) return kExitScheduler;
  if (!acted) std::cout << "nothing to cancel: the job is not queued or running here\n";
  return kExitOk;
}

}  // namespace dlaunch
