#include "launcher/cli/job_view.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/json_line.h"
#include "launcher/jobdir/job_directory.h"
#include "launcher/job/live_table.h"
#include "launcher/trace/goodput_view.h"

namespace dlaunch {
namespace {

using Fields = std::map<std::string, std::string>;

std::string FieldOr(const Fields& fields, const std::string& key, const std::string& otherwise) {
  auto it = fields.find(key);
  return it == fields.end() ? otherwise : it->second;
}

// A figure as summary.json's JSON spelled it: whole numbers without a fraction.
std::string Figure(double v) {
  if (v == static_cast<double>(static_cast<long long>(v)) && std::abs(v) < 1e15) {
    return absl::StrCat(static_cast<long long>(v));
  }
  return absl::StrFormat("%g", v);
}

std::string WallTime(const JobFiles& files) {
  double seconds = -1;
  if (files.summary.has_value() && files.summary->wall_time_s() > 0) {
    seconds = files.summary->wall_time_s();
  }
  for (const v1::JobEvent& e : files.events) {
    if (seconds < 0 && e.has_job_finished()) seconds = e.job_finished().wall_time_s();
  }
  return seconds < 0 ? "" : FormatClock(seconds);
}

std::string NodesLine(const JobFiles& files) {
  if (files.summary.has_value() && files.summary->nodes() > 0) {
    return absl::StrCat(files.summary->nodes());
  }
  for (const v1::JobEvent& e : files.events) {
    if (e.has_job_started() && e.job_started().nodes() > 0) {
      return absl::StrCat(e.job_started().nodes(), " asked for");
    }
  }
  return "";
}

std::string RanksLine(const JobFiles& files) {
  if (files.summary.has_value() && files.summary->world_size() > 0) {
    std::string line = absl::StrCat(files.summary->world_size());
    if (files.summary->has_ranks_succeeded()) {
      absl::StrAppend(&line, ", ", files.summary->ranks_succeeded().value(), " succeeded");
    }
    return line;
  }
  int world = 0;
  for (const v1::JobEvent& e : files.events) {
    if (e.has_rendezvous_closed()) world = e.rendezvous_closed().world_size();
    if (e.has_round_started()) world = e.round_started().world_size();
  }
  return world > 0 ? absl::StrCat(world) : "";
}

// Nested values in the events list (a node's preflight checks, a failure) in a few words, not
// their JSON: a failure by the sentence dlaunch printed for it, a list by its length.
// events.jsonl keeps them whole.
constexpr size_t kMaxEventValue = 60;

std::string EventValueText(const std::string& v) {
  if (v.size() <= kMaxEventValue || (v[0] != '[' && v[0] != '{')) return v;
  if (v[0] == '{') {
    absl::StatusOr<Fields> fields = ParseJsonObjectFields(v);
    const std::string description = fields.ok() ? FieldOr(*fields, "description", "") : "";
    return description.empty() ? "{...}" : absl::StrCat("\"", description, "\"");
  }
  int depth = 0, entries = 1;
  bool in_string = false, escaped = false;
  for (char c : v) {
    if (in_string) {
      escaped = !escaped && c == '\\';
      if (!escaped && c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    if (c == '[' || c == '{') ++depth;
    if (c == ']' || c == '}') --depth;
    if (c == ',' && depth == 1) ++entries;
  }
  return absl::StrCat("[", entries, " entries]");
}

// The summary in words; its failures by the line dlaunch printed for them.
std::string SummaryLines(const v1::JobSummary& summary, const std::string& goodput_error) {
  std::string out = "summary:\n";
  absl::StrAppend(&out, "  result: ", summary.result().empty() ? "finished" : summary.result(),
                  " (exit ", summary.exit_code(), ")\n");
  if (summary.has_root_cause()) {
    const v1::FailureRecord& cause = summary.root_cause();
    absl::StrAppend(&out, "  root cause: ",
                    cause.description().empty() ? cause.failure_class() : cause.description(),
                    "\n");
  } else if (!summary.failure().empty()) {
    absl::StrAppend(&out, "  failure: ", summary.failure(), "\n");
  }
  // Without a report from any rank (a script that sends none) the throughput is unknown, not 0:
  // final_loss is there once a rank reported, and samples once it counted any.
  if (summary.has_final_loss() || summary.samples() > 0) {
    absl::StrAppend(&out, "  samples: ", summary.samples(), " at ",
                    Figure(summary.samples_per_sec()), " samples/s\n");
  }
  if (summary.has_final_loss()) {
    absl::StrAppend(&out, "  final loss: ", Figure(summary.final_loss().value()), "\n");
  }
  if (summary.has_test_accuracy()) {
    absl::StrAppend(&out, "  test accuracy: ", Figure(summary.test_accuracy().value()), "\n");
  }
  if (summary.max_restarts() > 0 || summary.restarts() > 0) {
    absl::StrAppend(&out, "  restarts: ", summary.restarts(), " of ", summary.max_restarts(), "\n");
  }
  if (!summary.not_restarted().empty()) {
    absl::StrAppend(&out, "  not restarted: ", summary.not_restarted(), "\n");
  }
  // The job's seconds (docs/goodput.md): the headline, the rounds and the checkpoint advice.
  if (!goodput_error.empty()) {
    absl::StrAppend(&out, "  goodput: unreadable (", goodput_error, ")\n");
  } else if (summary.has_goodput()) {
    absl::StrAppend(&out, "  ", GoodputHeadline(summary.goodput()), "\n");
    for (const std::string& line : GoodputReport(summary.goodput())) {
      if (absl::StartsWith(line, "  round ") ||
          absl::StartsWith(line, "  checkpoint interval that")) {
        absl::StrAppend(&out, "  ", line, "\n");
      }
    }
  } else {
    // A run's summary from an earlier dlaunch, or one whose journal was too big to read at exit.
    absl::StrAppend(&out, "  goodput: not in summary.json; `dlaunch trace JOB` computes it\n");
  }
  return out;
}

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
    const std::string& result = files.summary->result();
    return absl::StrCat(result.empty() ? "finished" : result, " (exit ",
                        files.summary->exit_code(), ")");
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
  const std::string started = JobStartTime(record, files);
  auto line = [&out](const char* label, const std::string& value) {
    if (!value.empty()) absl::StrAppend(&out, label, value, "\n");
  };
  line("started    ", started.empty() ? "" : ShortTime(started));
  line("wall time  ", WallTime(files));
  line("nodes      ", NodesLine(files));
  line("ranks      ", RanksLine(files));
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
      for (const auto& [k, v] : EventFields(e)) {
        absl::StrAppend(&out, " ", k, "=", EventValueText(v));
      }
      out += "\n";
    }
  }
  if (files.summary.has_value()) out += SummaryLines(*files.summary, files.goodput_error);
  absl::StrAppend(&out, "files:\n", "  logs     ", job_dir, "/logs\n");
  if (files.events_present) absl::StrAppend(&out, "  events   ", job_dir, "/events.jsonl\n");
  if (files.summary.has_value()) absl::StrAppend(&out, "  summary  ", job_dir, "/summary.json\n");
  return out;
}

std::string FormatJobStatusJson(const std::string& job_dir,
                                const absl::StatusOr<SubmitRecord>& record,
                                const std::string& submit_json, const JobFiles& files) {
  const size_t slash = job_dir.find_last_of('/');
  auto raw = [](const std::string& json) {
    std::string trimmed(absl::StripAsciiWhitespace(json));
    return trimmed.empty() ? std::string("null") : trimmed;
  };
  return JsonLine()
             .Add("job_id", slash == std::string::npos ? job_dir : job_dir.substr(slash + 1))
             .Add("directory", job_dir)
             .Add("state", LauncherView(files))
             .Add("started", JobStartTime(record, files))
             .Add("ended", JobEnded(files))
             .AddRaw("submit", raw(submit_json))
             .AddRaw("summary", raw(files.summary_json))
             .str() +
         "\n";
}

std::string JobStartTime(const absl::StatusOr<SubmitRecord>& record, const JobFiles& files) {
  for (const v1::JobEvent& e : files.events) {
    if (e.has_job_started()) return e.time();
  }
  if (!files.events.empty()) return files.events.front().time();
  return record.ok() ? record->submit_time : "";
}

bool IsDoctorRun(const std::string& job_id, const absl::StatusOr<SubmitRecord>& record,
                 const JobFiles& files) {
  if (!files.kind.empty()) return files.kind == kDoctorKind;
  // "-doctor-" then MakeJobId's "YYYYMMDD-HHMMSS-hhhh".
  constexpr size_t kSuffix = sizeof("-doctor-YYYYMMDD-HHMMSS-hhhh") - 1;
  return job_id.size() > kSuffix && job_id.compare(job_id.size() - kSuffix, 8, "-doctor-") == 0 &&
         !files.events_present && !record.ok();
}

std::string ShortTime(const std::string& t) {
  if (t.empty()) return "-";
  // Only what looks like RFC 3339 ("YYYY-MM-DDTHH:MM:SS..."); anything else as it is.
  if (t.size() < 19 || t[10] != 'T') return t;
  return absl::StrCat(t.substr(0, 10), " ", t.substr(11, 8), t.back() == 'Z' ? "Z" : "");
}

std::string FormatJobListRow(const std::string& job_id, const std::string& job_dir,
                             const std::string& started,
                             const absl::StatusOr<SubmitRecord>& record, const JobFiles& files) {
  std::string scheduler_job = "-";
  if (record.ok() && !record->scheduler_job_id.empty()) {
    scheduler_job = record->scheduler_job_id;
  } else if (record.ok() && record->dry_run) {
    scheduler_job = "(dry run)";
  }
  return absl::StrCat(job_id, "\t", ShortTime(started), "\t", LauncherView(files), "\t",
                      record.ok() && !record->site.empty() ? record->site : "-", "\t",
                      scheduler_job, "\t", job_dir, "\n");
}

}  // namespace dlaunch
