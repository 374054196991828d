// A job directory's timeline: reads its journal (events.jsonl, metrics.jsonl) and the workers'
// step traces (trace/rank-N.jsonl), and writes runs/<job-id>/trace.json. The launcher writes it
// when the job ends; `dlaunch trace JOB` builds it when it is missing (a killed launcher).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dlaunch/goodput.pb.h"
#include "launcher/trace/trace_bound.h"
#include "launcher/trace/trace_builder.h"

namespace dlaunch {

std::string TracePath(const std::string& job_dir);
// Where dlaunch-worker writes rank `rank`'s step phases.
std::string RankStepTracePath(const std::string& job_dir, int rank);

// NotFound when the directory has no events.jsonl (not a job `dlaunch run` started).
absl::StatusOr<TraceInput> LoadTraceInput(const std::string& job_dir);

// Builds and writes trace.json (atomically); returns what was written.
absl::StatusOr<RenderedTrace> WriteJobTrace(const std::string& job_dir,
                                            size_t limit_bytes = kDefaultTraceLimitBytes);
// The same from an input already loaded and its goodput account (ComputeGoodput).
absl::StatusOr<RenderedTrace> WriteJobTrace(const std::string& job_dir, const TraceInput& input,
                                            const v1::GoodputAccount& goodput,
                                            size_t limit_bytes = kDefaultTraceLimitBytes);

// The bytes of what a trace is built from: events.jsonl, metrics.jsonl and trace/*.jsonl.
uint64_t TraceInputBytes(const std::string& job_dir);
// At the end of a run the launcher builds trace.json only up to this much input (about 5 s on
// one core: reading the journal is most of the cost); `dlaunch trace JOB` builds any size.
constexpr uint64_t kTraceAtExitInputBytes = 32ull << 20;

// Adds the goodput account to the job's summary.json (launcher/trace/goodput.h), replacing one
// written before. NotFound when the job has no summary.json (it has not ended).
absl::Status AddGoodputToSummary(const std::string& job_dir, const v1::GoodputAccount& account);

// The notes in a trace.json's metadata (what was thinned or skipped).
absl::StatusOr<std::vector<std::string>> ReadTraceNotes(const std::string& trace_json);

}  // namespace dlaunch
