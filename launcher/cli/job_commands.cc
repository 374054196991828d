#include "launcher/cli/job_commands.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "common/environment.h"
#include "common/exit_codes.h"
#include "common/file_io.h"
#include "common/json_line.h"
#include "launcher/cli/cli_support.h"
#include "launcher/cli/job_view.h"
#include "launcher/cli/watch_command.h"
#include "launcher/jobdir/job_directory.h"
#include "launcher/jobdir/job_index.h"
#include "launcher/jobdir/job_record.h"
#include "launcher/jobdir/journal.h"
#include "launcher/submit/scheduler_client.h"
#include "launcher/submit/site_profile.h"

namespace dlaunch {
namespace fs = std::filesystem;
namespace {

constexpr size_t kRecentJobs = 20;
constexpr size_t kStatusEvents = 10;
// How often `logs --follow` looks for new lines and for the job's end.
constexpr std::chrono::milliseconds kFollowPoll(250);

constexpr char kStatusUsage[] =
    "usage: dlaunch status [JOB] [--json]\n"
    "  JOB is a job id or a job directory. An id is looked for under $DLAUNCH_JOB_ROOT\n"
    "  (default runs/), then among the jobs you started anywhere (the job index in\n"
    "  $XDG_STATE_HOME/dlaunch, default ~/.local/state/dlaunch).\n"
    "  Without JOB, lists your recent jobs, newest first (`dlaunch doctor` runs left out).\n"
    "  Of a running job, also one live table from its launcher (see `dlaunch watch`).\n"
    "  --json   the job (or the list) as JSON, for scripts\n";
constexpr char kLogsUsage[] =
    "usage: dlaunch logs JOB [--rank N] [--follow]\n"
    "  Prints runs/JOB/logs/rank-N.log; all ranks, each line prefixed, without --rank.\n"
    "  --follow   keep printing new lines until the job finishes (Ctrl-C stops)\n";
constexpr char kCancelUsage[] =
    "usage: dlaunch cancel JOB\n"
    "  Cancels the scheduler job (qdel / scancel) and stops the job's launcher.\n";

absl::StatusOr<SubmitRecord> LoadRecord(const std::string& job_dir) {
  absl::StatusOr<std::string> text = ReadFile(job_dir + "/submit.json");
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
                                                  ProcessEnvironment()),
                         RealCommandRunner());
}

// What dlaunch itself recorded in the job directory.
JobFiles ReadJobFiles(const std::string& job_dir) {
  JobFiles files;
  absl::StatusOr<EventJournal> journal = ReadEventJournal(job_dir);
  files.events_present = !absl::IsNotFound(journal.status());
  if (journal.ok()) {
    files.events = std::move(journal->events);
    files.schema_version = journal->schema_version;
  } else if (files.events_present) {
    files.events_error = std::string(journal.status().message());
  }
  absl::StatusOr<std::string> summary_text = ReadFile(job_dir + "/summary.json");
  if (summary_text.ok()) {
    absl::StatusOr<JobSummaryFile> summary = ParseJobSummary(*summary_text);
    if (summary.ok()) {
      files.summary = std::move(summary->summary);
      files.goodput_error = std::move(summary->goodput_error);
      files.summary_json = *std::move(summary_text);
    }
  }
  absl::StatusOr<std::string> kind = ReadFile(job_dir + "/" + kJobKindFile);
  if (kind.ok()) files.kind = std::string(absl::StripAsciiWhitespace(*kind));
  return files;
}

// The most recent jobs under `root` and in the user's job index, each once, doctor runs left
// out, newest first by their start. The index keeps every job the user ever started, so only
// the kRecentJobs most recently changed directories have their files read.
struct ListedJob {
  std::string id;
  std::string dir;
  std::string started;
  absl::StatusOr<SubmitRecord> record;
  JobFiles files;
};

std::vector<ListedJob> RecentJobs(const std::string& root) {
  std::vector<std::string> dirs = ListJobDirs(root);
  for (std::string& dir : JobIndex(JobIndex::DefaultRoot()).List()) dirs.push_back(std::move(dir));
  struct Candidate {
    std::string dir;
    int64_t mtime = 0;
  };
  std::set<std::string> seen;
  std::vector<Candidate> candidates;
  for (const std::string& dir : dirs) {
    std::error_code ec;
    fs::path canonical = fs::canonical(dir, ec);
    struct stat st;
    if (ec || !seen.insert(canonical.string()).second || ::stat(dir.c_str(), &st) != 0) continue;
    candidates.push_back({dir, static_cast<int64_t>(st.st_mtime)});
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) { return a.mtime > b.mtime; });
  std::vector<ListedJob> jobs;
  for (const Candidate& c : candidates) {
    if (jobs.size() == kRecentJobs) break;
    ListedJob job{fs::path(c.dir).filename().string(), c.dir, "", LoadRecord(c.dir),
                  ReadJobFiles(c.dir)};
    if (IsDoctorRun(job.id, job.record, job.files)) continue;
    job.started = JobStartTime(job.record, job.files);
    if (job.started.empty()) {
      job.started = absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromTimeT(c.mtime),
                                     absl::UTCTimeZone());
    }
    jobs.push_back(std::move(job));
  }
  std::stable_sort(jobs.begin(), jobs.end(), [](const ListedJob& a, const ListedJob& b) {
    return ShortTime(a.started) > ShortTime(b.started);
  });
  return jobs;
}

int ListRecentJobs(const std::string& root, bool json) {
  std::vector<ListedJob> jobs = RecentJobs(root);
  if (json) {
    std::string list;
    for (const ListedJob& job : jobs) {
      absl::StrAppend(&list, list.empty() ? "" : ",",
                      JsonLine()
                          .Add("job_id", job.id)
                          .Add("directory", AbsolutePath(job.dir))
                          .Add("started", job.started)
                          .Add("state", LauncherView(job.files))
                          .Add("ended", JobEnded(job.files))
                          .str());
    }
    std::cout << "[" << list << "]\n";
    return kExitOk;
  }
  if (jobs.empty()) {
    std::cout << "no jobs in " << root << " or in the job index\n";
    return kExitOk;
  }
  std::cout << kJobListHeader;
  for (const ListedJob& job : jobs) {
    std::cout << FormatJobListRow(job.id, job.dir, job.started, job.record, job.files);
  }
  return kExitOk;
}

int ShowJob(const std::string& job_arg, const std::string& root, bool json) {
  absl::StatusOr<std::string> dir = ResolveJobDir(job_arg, root);
  if (!dir.ok()) {
    std::cerr << "dlaunch: " << dir.status().message() << "\n";
    return kExitUsage;
  }
  absl::StatusOr<SubmitRecord> rec = LoadRecord(*dir);
  JobFiles files = ReadJobFiles(*dir);
  if (json) {
    absl::StatusOr<std::string> submit_text = ReadFile(*dir + "/submit.json");
    const bool submitted = rec.ok() && submit_text.ok();
    std::cout << FormatJobStatusJson(*dir, rec, submitted ? *submit_text : "", files);
    return kExitOk;
  }
  SchedulerAnswer answer;
  if (rec.ok() && !rec->dry_run && !rec->scheduler_job_id.empty()) {
    answer = ClientFor(*rec).Query(rec->scheduler_job_id, *dir);
  }
  std::cout << FormatJobStatus(*dir, rec, answer, files, kStatusEvents);
  if (!JobEnded(files)) PrintLiveStatus(*dir, std::cout);
  return answer.has_value() && !answer->ok() ? kExitLaunchError : kExitOk;
}

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
  absl::StatusOr<std::string> text = ReadFile(job_dir + "/launcher.json");
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

int RunStatusCommand(const std::vector<std::string>& args) {
  if (WantsHelp(args)) {
    std::cout << kStatusUsage;
    return kExitOk;
  }
  bool json = false;
  const std::vector<Flag> table = {{{"--json"}, false, SwitchFlag(&json)}};
  ParsedArgs parsed;
  int rc = kExitOk;
  if (!ParseCommandFlags(args, table, 1, kStatusUsage, &parsed, &rc)) return rc;
  const std::string root = DefaultJobRoot();
  return parsed.positional.empty() ? ListRecentJobs(root, json)
                                   : ShowJob(parsed.positional[0], root, json);
}

int RunLogsCommand(const std::vector<std::string>& args) {
  if (WantsHelp(args)) {
    std::cout << kLogsUsage;
    return kExitOk;
  }
  int rank = -1;
  bool follow = false;
  const std::vector<Flag> table = {
      {{"--rank"}, true, IntFlag("--rank", &rank, 0, std::numeric_limits<int>::max())},
      {{"--follow", "-f"}, false, SwitchFlag(&follow)},
  };
  std::string job_dir;
  int rc = kExitOk;
  if (!ParseJobCommand(args, table, kLogsUsage, &job_dir, &rc)) return rc;
  std::map<std::string, std::streamoff> offsets;
  auto print_all = [&]() {
    std::map<int, std::string> logs = RankLogs(job_dir);
    for (const auto& [r, path] : logs) {
      if (rank >= 0 && r != rank) continue;
      PrintNewLines(path, rank >= 0 ? "" : absl::StrCat("[rank ", r, "] "), &offsets[path]);
    }
    return logs;
  };
  std::map<int, std::string> logs = print_all();
  if (!follow) {
    if (rank >= 0 && !logs.count(rank)) {
      std::cerr << "dlaunch: no log for rank " << rank << " in " << job_dir << "/logs\n";
      return kExitUsage;
    }
    if (logs.empty()) std::cerr << "dlaunch: no rank logs yet in " << job_dir << "/logs\n";
    return kExitOk;
  }
  // Follow until the job directory says the job ended (summary.json, or job_finished as the
  // last event), or until a launcher known to run here is gone without either (killed); a
  // final pass picks up the last lines.
  while (!JobEnded(ReadJobFiles(job_dir)) && !LauncherGoneHere(job_dir)) {
    std::this_thread::sleep_for(kFollowPoll);
    print_all();
  }
  print_all();
  return kExitOk;
}

int RunCancelCommand(const std::vector<std::string>& args) {
  if (WantsHelp(args)) {
    std::cout << kCancelUsage;
    return kExitOk;
  }
  std::string job_dir;
  int rc = kExitOk;
  if (!ParseJobCommand(args, {}, kCancelUsage, &job_dir, &rc)) return rc;
  bool acted = false;
  bool scheduler_failed = false;
  absl::StatusOr<SubmitRecord> rec = LoadRecord(job_dir);
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
  absl::StatusOr<std::string> info_text = ReadFile(job_dir + "/launcher.json");
  if (!acted && info_text.ok() && !fs::exists(job_dir + "/summary.json")) {
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
  if (scheduler_failed) return kExitLaunchError;
  if (!acted) std::cout << "nothing to cancel: the job is not queued or running here\n";
  return kExitOk;
}

}  // namespace dlaunch
