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
  std::optional<std::map<std::string, std::string>> summary;  // summary.json, when it parses
};

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
// submit.json was read), dlaunch's view, the last `max_events` events and the summary.
std::string FormatJobStatus(const std::string& job_dir,
                            const absl::StatusOr<SubmitRecord>& record,
                            const SchedulerAnswer& scheduler, const JobFiles& files,
                            size_t max_events);

// One row of `dlaunch status` without a job: JOB, SITE, SCHEDULER JOB, SUBMITTED, STATE.
std::string FormatJobListRow(const std::string& job_id,
                             const absl::StatusOr<SubmitRecord>& record, const JobFiles& files);

}  // namespace dlaunch
