#include "launcher/cli/job_view.h"

#include <algorithm>
#include <cstdint>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/json_line.h"
#include "launcher/jobdir/job_directory.h"
#include "launcher/run/live_table.h"
#include "launcher/trace/goodput_view.h"

namespace dlaunch {
namespace {

using Fields = std::map<std::string, std::string>;

std::string FieldOr(const Fields& fields, const std::string& key, const std::string& otherwise) {
  auto it = fields.find(key);
  return it == fields.end() ? otherwise : it->second;
}

// A count the summary holds, when above 0.
std::optional<int64_t> PositiveCount(const Fields& fields, const std::string& key) {
  int64_t n = 0;
  auto it = fields.find(key);
  if (it == fields.end() || !absl::SimpleAtoi(it->second, &n) || n <= 0) return std::nullopt;
  return n;
}

std::string WallTime(const JobFiles& files) {
  double seconds = -1;
  if (files.summary.has_value()) {
    auto it = files.summary->find("wall_time_s");
    if (it != files.summary->end() && !absl::SimpleAtod(it->second, &seconds)) seconds = -1;
  }
  for (const v1::JobEvent& e : files.events) {
    if (seconds < 0 && e.has_job_finished()) seconds = e.job_finished().wall_time_s();
  }
  return seconds < 0 ? "" : FormatClock(seconds);
}

std::string NodesLine(const JobFiles& files) {
  if (files.summary.has_value()) {
    if (auto n = PositiveCount(*files.summary, "nodes")) return absl::StrCat(*n);
  }
  for (const v1::JobEvent& e : files.events) {
    if (e.has_job_started() && e.job_started().nodes() > 0) {
      return absl::StrCat(e.job_started().nodes(), " asked for");
    }
  }
  return "";
}

std::string RanksLine(const JobFiles& files) {
  if (files.summary.has_value()) {
    if (auto n = PositiveCount(*files.summary, "world_size")) {
      std::string line = absl::StrCat(*n);
      if (auto it = files.summary->find("ranks_succeeded"); it != files.summary->end()) {
        absl::StrAppend(&line, ", ", it->second, " succeeded");
      }
      return line;
    }
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

// The summary in words; its nested failures by the line dlaunch printed for them.
std::string SummaryLines(const Fields& summary) {
  std::string out = "summary:\n";
  std::string result = FieldOr(summary, "result", FieldOr(summary, "status", "finished"));
  if (summary.count("exit_code")) absl::StrAppend(&result, " (exit ", summary.at("exit_code"), ")");
  absl::StrAppend(&out, "  result: ", result, "\n");
  if (auto it = summary.find("root_cause"); it != summary.end()) {
    absl::StatusOr<Fields> cause = ParseJsonObjectFields(it->second);
    std::string text = cause.ok() ? FieldOr(*cause, "description", FieldOr(*cause, "class", ""))
                                  : "";
    absl::StrAppend(&out, "  root cause: ", text.empty() ? it->second : text, "\n");
  } else if (auto f = summary.find("failure"); f != summary.end()) {
    absl::StrAppend(&out, "  failure: ", f->second, "\n");
  }
  // Without a report from any rank (a script that sends none) the throughput is unknown, not 0:
  // final_loss is there once a rank reported, and samples once it counted any.
  if (summary.count("final_loss") || PositiveCount(summary, "samples")) {
    absl::StrAppend(&out, "  samples: ", FieldOr(summary, "samples", "0"), " at ",
                    FieldOr(summary, "samples_per_sec", "0"), " samples/s\n");
  }
  if (summary.count("final_loss")) {
    absl::StrAppend(&out, "  final loss: ", summary.at("final_loss"), "\n");
  }
  if (summary.count("test_accuracy")) {
    absl::StrAppend(&out, "  test accuracy: ", summary.at("test_accuracy"), "\n");
  }
  if (PositiveCount(summary, "max_restarts") || PositiveCount(summary, "restarts")) {
    absl::StrAppend(&out, "  restarts: ", FieldOr(summary, "restarts", "0"), " of ",
                    FieldOr(summary, "max_restarts", "0"), "\n");
  }
  if (summary.count("not_restarted")) {
    absl::StrAppend(&out, "  not restarted: ", summary.at("not_restarted"), "\n");
  }
  // The job's seconds (docs/goodput.md): the headline, the rounds and the checkpoint advice.
  if (auto it = summary.find("goodput"); it != summary.end()) {
    absl::StatusOr<v1::GoodputAccount> account = ParseGoodputJson(it->second);
    if (!account.ok()) {
      absl::StrAppend(&out, "  goodput: unreadable (", account.status().message(), ")\n");
    } else {
      absl::StrAppend(&out, "  ", GoodputHeadline(*account), "\n");
      for (const std::string& line : GoodputReport(*account)) {
        if (absl::StartsWith(line, "  round ") ||
            absl::StartsWith(line, "  checkpoint interval that")) {
          absl::StrAppend(&out, "  ", line, "\n");
        }
      }
    }
  } else if (summary.count("wall_time_s")) {
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
  if (files.summary.has_value()) out += SummaryLines(*files.summary);
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
