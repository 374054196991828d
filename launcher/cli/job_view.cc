#include "launcher/cli/job_view.h"

#include "absl/strings/str_cat.h"

namespace dlaunch {
namespace {

std::string SchedulerLine(const SubmitRecord& record, const SchedulerAnswer& scheduler) {
  if (record.dry_run) return "scheduler  not submitted (dry run)\n";
  if (record.scheduler_job_id.empty() || !scheduler.has_value()) {
    return "scheduler  submission failed\n";
  }
  const absl::StatusOr<SchedulerJobStatus>& s = *scheduler;
  if (!s.ok()) {
    return absl::StrCat("scheduler  job ", record.scheduler_job_id, ": cannot ask (",
                        s.status().message(), ")\n");
  }
  std::string line = absl::StrCat("scheduler  job ", record.scheduler_job_id, ": ", s->state);
  if (!s->raw_state.empty()) absl::StrAppend(&line, " (", s->raw_state, ")");
  if (!s->exit_status.empty()) absl::StrAppend(&line, ", exit status ", s->exit_status);
  return line + "\n";
}

}  // namespace

std::string LauncherView(const JobFiles& files) {
  if (files.summary.has_value()) {
    const auto& summary = *files.summary;
    std::string state = summary.count("result")   ? summary.at("result")
                        : summary.count("status") ? summary.at("status")
                                                  : "finished";
    if (summary.count("exit_code")) absl::StrAppend(&state, " (exit ", summary.at("exit_code"), ")");
    return state;
  }
  if (files.events.empty()) return files.events_present ? "started, no events yet" : "not started";
  int joined = 0, failed = 0, lost = 0;
  for (const auto& e : files.events) {
    joined += e.has_node_joined();
    failed += e.has_worker_failed();
    lost += e.has_node_lost();
  }
  if (files.events.back().has_job_finished()) return "finished";
  std::string view =
      absl::StrCat("running: ", joined, " node(s) joined, ", failed, " worker failure(s)");
  if (lost > 0) absl::StrAppend(&view, ", ", lost, " node(s) lost");
  return view;
}

bool JobEnded(const JobFiles& files) {
  return files.summary.has_value() ||
         (!files.events.empty() && files.events.back().has_job_finished());
}

std::string FormatJobStatus(const std::string& job_dir,
                            const absl::StatusOr<SubmitRecord>& record,
                            const SchedulerAnswer& scheduler, const JobFiles& files,
                            size_t max_events) {
  const size_t slash = job_dir.find_last_of('/');
  std::string out = absl::StrCat(
      "job        ", slash == std::string::npos ? job_dir : job_dir.substr(slash + 1), "\n",
      "directory  ", job_dir, "\n");
  if (record.ok()) {
    absl::StrAppend(&out, "site       ", record->site, " (", record->scheduler, ")\n",
                    "submitted  ", record->submit_time, " from ", record->cwd, "\n",
                    SchedulerLine(*record, scheduler));
  }
  absl::StrAppend(&out, "dlaunch    ", LauncherView(files), "\n");
  if (!files.events_error.empty()) {
    absl::StrAppend(&out, "journal    ", files.events_error, "\n");
  } else if (files.schema_version != kJournalSchemaVersion && !files.events.empty()) {
    absl::StrAppend(&out, "journal    schema version ", files.schema_version,
                    " (untyped, from an earlier dlaunch), read as version ",
                    kJournalSchemaVersion, "\n");
  }
  if (!files.events.empty()) {
    out += "events:\n";
    const size_t n = files.events.size();
    for (size_t i = n > max_events ? n - max_events : 0; i < n; ++i) {
      const v1::JobEvent& e = files.events[i];
      absl::StrAppend(&out, "  ", e.time(), "  ", EventName(e));
      for (const auto& [k, v] : EventFields(e)) absl::StrAppend(&out, " ", k, "=", v);
      out += "\n";
    }
  }
  if (files.summary.has_value()) {
    out += "summary:\n";
    for (const auto& [k, v] : *files.summary) absl::StrAppend(&out, "  ", k, ": ", v, "\n");
  }
  return out;
}

std::string FormatJobListRow(const std::string& job_id,
                             const absl::StatusOr<SubmitRecord>& record, const JobFiles& files) {
  std::string scheduler_job = "-";
  if (record.ok() && !record->scheduler_job_id.empty()) {
    scheduler_job = record->scheduler_job_id;
  } else if (record.ok() && record->dry_run) {
    scheduler_job = "(dry run)";
  }
  return absl::StrCat(job_id, "\t", record.ok() ? record->site : "-", "\t", scheduler_job, "\t",
                      record.ok() ? record->submit_time : "-", "\t", LauncherView(files), "\n");
}

}  // namespace dlaunch
