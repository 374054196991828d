// What `dlaunch status` and `dlaunch logs --follow` conclude from a job directory, as pure
// functions of what was read from it (submit.json, the scheduler's answer, events.jsonl,
// summary.json), so the wording and the "is it over" decision are unit-tested without files.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "launcher/jobdir/job_record.h"
#include "launcher/jobdir/journal.h"
#include "launcher/submit/scheduler_client.h"

namespace dlaunch {

// dlaunch's own records of a job, as read from its directory.
struct JobFiles {
  bool events_present = false;  // events.jsonl exists (it may still be empty)
  std::vector<v1::JobEvent> events;
  int schema_version = kJournalSchemaVersion;  // of events.jsonl as found
  std::string events_error;     // why events.jsonl could not be read (a newer schema)
  std::optional<v1::JobSummary> summary;  // summary.json, when it reads (journal.h)
  std::string summary_json;     // summary.json as written, when it reads (for --json)
  std::string goodput_error;    // why summary.json's goodput account could not be read
  std::string kind;             // the `kind` file: "doctor" for a `dlaunch doctor` run
};

// When the job started, RFC 3339 as recorded: its job_started event, else its first event,
// else its submission; "" when none of these is known.
std::string JobStartTime(const absl::StatusOr<SubmitRecord>& record, const JobFiles& files);

// A `dlaunch doctor` run: its `kind` file says so, or (written before there was one) its id is
// "<name>-doctor-<time>-<hex>" and it has no journal and no submit.json.
bool IsDoctorRun(const std::string& job_id, const absl::StatusOr<SubmitRecord>& record,
                 const JobFiles& files);

// "failed (exit 1)", "finished", "running: 2 node(s) joined, 1 worker failure(s)",
// "started, no events yet", "not started".
std::string LauncherView(const JobFiles& files);

// The job is over as far as its directory says: summary.json is there, or the last event in
// events.jsonl is job_finished (the summary write may have failed, or may not be visible on this
// host yet). `logs --follow` stops on this, also on hosts where it cannot see the launcher's pid.
bool JobEnded(const JobFiles& files);

// What the scheduler said about the job: absent when it was not asked (dry run, failed
// submission, no record), else its answer or why it could not be asked.
using SchedulerAnswer = std::optional<absl::StatusOr<SchedulerJobStatus>>;

// The text of `dlaunch status JOB`: job, directory, submission and scheduler lines (when
// submit.json was read), dlaunch's view, when it started, its wall time, nodes and ranks, the
// last `max_events` events, the summary in words (result, root cause, throughput when ranks
// reported any) and where its files are.
std::string FormatJobStatus(const std::string& job_dir,
                            const absl::StatusOr<SubmitRecord>& record,
                            const SchedulerAnswer& scheduler, const JobFiles& files,
                            size_t max_events);

// `dlaunch status JOB --json`: one object with the job's id, directory, state and start, and
// submit.json and summary.json as written (null when absent), for scripts.
std::string FormatJobStatusJson(const std::string& job_dir,
                                const absl::StatusOr<SubmitRecord>& record,
                                const std::string& submit_json, const JobFiles& files);

// The header and one row of `dlaunch status` without a job: JOB, STARTED, STATE, SITE,
// SCHEDULER JOB, DIRECTORY. `started` is JobStartTime's, or the directory's time.
inline constexpr char kJobListHeader[] = "JOB\tSTARTED\tSTATE\tSITE\tSCHEDULER JOB\tDIRECTORY\n";
std::string FormatJobListRow(const std::string& job_id, const std::string& job_dir,
                             const std::string& started,
                             const absl::StatusOr<SubmitRecord>& record, const JobFiles& files);

// "2026-11-21 10:15:30Z" of an RFC 3339 time (fractions dropped); "-" for "".
std::string ShortTime(const std::string& rfc3339);

}  // namespace dlaunch
