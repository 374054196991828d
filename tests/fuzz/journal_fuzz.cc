// The job directory's journal as `dlaunch status`, `trace` and `scale` read it. The input is
// events.jsonl, metrics.jsonl, a rank's trace/rank-0.jsonl and summary.json, separated by NUL
// bytes. Every event read prints back as a journal line that reads as the same event, so does
// the summary, and the timeline built from them all is JSON.
#include <google/protobuf/stubs/common.h>
#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <string>

#include "launcher/jobdir/journal.h"
#include "launcher/study/run_metrics.h"
#include "launcher/trace/host_counters.h"
#include "launcher/trace/trace_bound.h"
#include "launcher/trace/trace_builder.h"
#include "tests/fuzz/fuzz_target.h"

namespace {

// Debian's Abseil has its own string_view, not std's.
absl::string_view Absl(std::string_view s) { return absl::string_view(s.data(), s.size()); }

// Small, so the thinning that long jobs need is reached by small inputs.
constexpr size_t kTraceLimitBytes = 16 * 1024;

void CheckEventsPrintBack(const dlaunch::EventJournal& journal) {
  for (const dlaunch::v1::JobEvent& event : journal.events) {
    (void)dlaunch::EventName(event);
    (void)dlaunch::EventFields(event);
    absl::StatusOr<std::string> line = dlaunch::EventJournalLine(event);
    FUZZ_CHECK(line.ok(), line.status().ToString());
    absl::StatusOr<dlaunch::EventJournal> again = dlaunch::ParseEventJournal(*line);
    if (!again.ok()) continue;  // a JournalOpened of a newer schema, refused as it should be
    FUZZ_CHECK(again->events.size() == 1 && again->bad_lines == 0, *line);
    absl::StatusOr<std::string> line_again = dlaunch::EventJournalLine(again->events[0]);
    FUZZ_CHECK(line_again.ok() && *line_again == *line, *line);
  }
}

// A summary read, of any dlaunch, prints back as one that reads as the same summary.
void CheckSummaryPrintsBack(std::string_view text) {
  absl::StatusOr<dlaunch::JobSummaryFile> read = dlaunch::ParseJobSummary(Absl(text));
  if (!read.ok()) return;
  absl::StatusOr<std::string> json = dlaunch::JobSummaryJson(read->summary);
  FUZZ_CHECK(json.ok(), json.status().ToString());
  absl::StatusOr<dlaunch::JobSummaryFile> again = dlaunch::ParseJobSummary(*json);
  FUZZ_CHECK(again.ok() && again->goodput_error.empty(), *json);
  absl::StatusOr<std::string> json_again = dlaunch::JobSummaryJson(again->summary);
  FUZZ_CHECK(json_again.ok() && *json_again == *json, *json);
}

void CheckTrace(dlaunch::EventJournal events, dlaunch::MetricJournal metrics,
                std::string_view step_trace) {
  std::vector<dlaunch::v1::MetricLine> hosts = metrics.hosts;
  dlaunch::TraceInput input = dlaunch::MakeTraceInput(std::move(events), std::move(metrics));
  input.hosts = std::move(hosts);
  input.rank_steps[0] = dlaunch::ParseStepTrace(Absl(step_trace));
  dlaunch::TraceParts parts = dlaunch::BuildTraceParts(input);
  for (dlaunch::TraceEvent& c : dlaunch::HostCounters(input.hosts, parts.origin_unix_us)) {
    parts.instants.push_back(std::move(c));
  }
  const dlaunch::RenderedTrace trace = dlaunch::RenderTrace(parts, kTraceLimitBytes);
  google::protobuf::Struct parsed;
  const auto status = google::protobuf::util::JsonStringToMessage(trace.json, &parsed);
  FUZZ_CHECK(status.ok(), std::string(status.message()) + "\n" + trace.json.substr(0, 4096));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string_view> parts =
      dlaunch::fuzz::SplitInput(std::string_view(reinterpret_cast<const char*>(data), size), 4);
  absl::StatusOr<dlaunch::EventJournal> events = dlaunch::ParseEventJournal(Absl(parts[0]));
  dlaunch::MetricJournal metrics = dlaunch::ParseMetricJournal(Absl(parts[1]));
  (void)dlaunch::ParseRunMetrics(std::string(parts[3]), std::string(parts[1]));
  CheckSummaryPrintsBack(parts[3]);
  if (!events.ok()) {
    FUZZ_CHECK(events.status().code() == absl::StatusCode::kFailedPrecondition,
               events.status().ToString());
    return 0;
  }
  CheckEventsPrintBack(*events);
  CheckTrace(*std::move(events), std::move(metrics), parts[2]);
  return 0;
}
