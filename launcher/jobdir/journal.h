// The job's journal: events.jsonl (v1::JobEvent) and metrics.jsonl (v1::MetricLine), one line
// of protobuf JSON each, and summary.json (v1::JobSummary), the job's end (proto/journal.proto).
// The one writer of their text and the one reader of the three files: the trace, the study,
// `dlaunch status`, `watch`, `logs` and `scale` read through here. A journal or summary written
// before the schema (version 1: `"event":"..."` lines, a bare `"node"`) is upgraded as it is
// read; a journal from a newer dlaunch is refused. Pure, apart from the Read* shells.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "dlaunch/journal.pb.h"
#include "proto/journal_schema.h"

namespace dlaunch {

// One events.jsonl line (no newline): protobuf JSON, snake_case names, every field printed.
absl::StatusOr<std::string> EventJournalLine(const v1::JobEvent& event);
// One metrics.jsonl line.
absl::StatusOr<std::string> MetricJournalLine(const v1::MetricLine& metric);

// summary.json's object (no newline), in the journal's mapping.
absl::StatusOr<std::string> JobSummaryJson(const v1::JobSummary& summary);

struct EventJournal {
  int schema_version = kJournalSchemaVersion;  // as found in the file; 1 was upgraded
  std::vector<v1::JobEvent> events;
  // Lines that are not journal records (a process killed mid-write leaves a torn last line).
  int bad_lines = 0;
};

struct MetricJournal {
  std::vector<v1::MetricLine> metrics;  // rank reports (MetricLine.report)
  std::vector<v1::MetricLine> hosts;    // host health (MetricLine.host), every few s per node
  int bad_lines = 0;
};

// events.jsonl's text. FailedPrecondition, naming `file` and the version found, for a journal
// of a schema newer than kJournalSchemaVersion.
absl::StatusOr<EventJournal> ParseEventJournal(absl::string_view text,
                                               const std::string& file = "events.jsonl");
MetricJournal ParseMetricJournal(absl::string_view text);

struct JobSummaryFile {
  v1::JobSummary summary;
  // Why the goodput account could not be read, when it was there but unreadable; the rest of
  // the summary is read without it.
  std::string goodput_error;
};

// summary.json's text, of this dlaunch or an earlier one. DataLoss when it is not one JSON
// object of the summary's fields.
absl::StatusOr<JobSummaryFile> ParseJobSummary(absl::string_view text);
// The summary of job directory `job_dir`: NotFound when it has none (the job has not ended).
absl::StatusOr<JobSummaryFile> ReadJobSummary(const std::string& job_dir);

// The files of job directory `job_dir`. A missing metrics.jsonl is an empty journal (no worker
// reported yet); a missing events.jsonl is NotFound.
absl::StatusOr<EventJournal> ReadEventJournal(const std::string& job_dir);
absl::StatusOr<MetricJournal> ReadMetricJournal(const std::string& job_dir);

// The event's name: its oneof field ("job_started", "node_lost", ...); "" when it has none.
std::string EventName(const v1::JobEvent& event);
// The event's round and own fields, as `dlaunch status` lists them: (name, value as text), in
// field order (strings unquoted, lists and objects as JSON; empty strings and lists left out).
std::vector<std::pair<std::string, std::string>> EventFields(const v1::JobEvent& event);

}  // namespace dlaunch
