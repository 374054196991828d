#include "launcher/trace/job_trace.h"

#include <google/protobuf/util/json_util.h>

#include <filesystem>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/file_io.h"
#include "launcher/jobdir/journal.h"
#include "launcher/trace/goodput_view.h"
#include "launcher/trace/host_counters.h"
#include "launcher/trace/json_lines.h"

namespace dlaunch {
namespace fs = std::filesystem;

std::string TracePath(const std::string& job_dir) { return job_dir + "/trace.json"; }

std::string RankStepTracePath(const std::string& job_dir, int rank) {
  return absl::StrCat(job_dir, "/trace/rank-", rank, ".jsonl");
}

absl::StatusOr<TraceInput> LoadTraceInput(const std::string& job_dir) {
  absl::StatusOr<EventJournal> events = ReadEventJournal(job_dir);
  if (!events.ok()) return events.status();
  // A job that never got a worker to report has no metrics yet: an empty journal is right.
  absl::StatusOr<MetricJournal> metrics = ReadMetricJournal(job_dir);
  if (!metrics.ok()) return metrics.status();
  std::vector<v1::MetricLine> hosts = std::move(metrics->hosts);
  TraceInput in = MakeTraceInput(*std::move(events), *std::move(metrics));
  in.hosts = std::move(hosts);

  std::error_code ec;
  for (fs::directory_iterator it(job_dir + "/trace", ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    absl::string_view v(name);
    int rank = 0;
    if (!absl::ConsumePrefix(&v, "rank-") || !absl::ConsumeSuffix(&v, ".jsonl") ||
        !absl::SimpleAtoi(v, &rank)) {
      continue;
    }
    absl::StatusOr<std::string> text = ReadFile(it->path().string());
    if (!text.ok()) return text.status();
    in.rank_steps[rank] = ParseStepTrace(*text);
  }
  return in;
}

absl::Status AddGoodputToSummary(const std::string& job_dir, const v1::GoodputAccount& account) {
  const std::string path = job_dir + "/summary.json";
  absl::StatusOr<std::string> summary = ReadFile(path);
  if (!summary.ok()) return summary.status();
  absl::StatusOr<std::string> with = SummaryWithGoodput(*summary, account);
  if (!with.ok()) return with.status();
  return WriteFileAtomically(path, *with + "\n");
}

uint64_t TraceInputBytes(const std::string& job_dir) {
  uint64_t bytes = 0;
  std::error_code ec;
  for (const char* name : {"/events.jsonl", "/metrics.jsonl"}) {
    const uintmax_t size = fs::file_size(job_dir + name, ec);
    if (!ec) bytes += size;
  }
  for (fs::directory_iterator it(job_dir + "/trace", ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code size_ec;
    const uintmax_t size = it->file_size(size_ec);
    if (!size_ec) bytes += size;
  }
  return bytes;
}

absl::StatusOr<RenderedTrace> WriteJobTrace(const std::string& job_dir, size_t limit_bytes) {
  absl::StatusOr<TraceInput> in = LoadTraceInput(job_dir);
  if (!in.ok()) return in.status();
  return WriteJobTrace(job_dir, *in, ComputeGoodput(*in), limit_bytes);
}

absl::StatusOr<RenderedTrace> WriteJobTrace(const std::string& job_dir, const TraceInput& input,
                                            const v1::GoodputAccount& goodput, size_t limit_bytes) {
  TraceParts parts = BuildTraceParts(input, goodput);
  // Counters are sampled with the other instants when the trace is over its limit.
  for (TraceEvent& c : HostCounters(input.hosts, parts.origin_unix_us)) {
    parts.instants.push_back(std::move(c));
  }
  RenderedTrace trace = RenderTrace(parts, limit_bytes);
  // Not synced: the trace can always be built again from the journal.
  absl::Status st = WriteFileAtomically(TracePath(job_dir), trace.json, WriteOptions{0644, false});
  if (!st.ok()) return st;
  return trace;
}

absl::StatusOr<std::vector<std::string>> ReadTraceNotes(const std::string& trace_json) {
  // One document across many lines: parsed whole, not line by line.
  JsonRecord root;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  if (!google::protobuf::util::JsonStringToMessage(trace_json, &root, options).ok()) {
    return absl::DataLossError("trace.json is not a JSON object");
  }
  std::vector<std::string> notes;
  const JsonRecord* metadata = ObjectField(root, "metadata");
  if (metadata == nullptr) return notes;
  auto it = metadata->fields().find("notes");
  if (it == metadata->fields().end() || !it->second.has_list_value()) return notes;
  for (const auto& v : it->second.list_value().values()) notes.push_back(v.string_value());
  return notes;
}

}  // namespace dlaunch
