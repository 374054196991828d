#include "launcher/trace/trace_bound.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "common/json_line.h"

namespace dlaunch {
namespace {

// Room kept for the document's header, its metadata and the notes.
constexpr size_t kHeaderReserve = 16 << 10;

TraceEvent ReportEvent(const ReportSpan& s) {
  const double seconds = static_cast<double>(s.end_us - s.begin_us) / 1e6;
  JsonLine args;
  if (s.first_step > 0) args.Add("first_step", s.first_step);
  args.Add("last_step", s.last_step)
      .Add("samples", s.samples)
      .Add("samples_per_sec", seconds > 0 ? s.samples / seconds : 0.0)
      .Add("loss", s.loss);
  if (s.reports > 1) args.Add("reports_merged", s.reports);
  // A worker's first report does not say where its interval began.
  std::string name = s.first_step <= 0 ? absl::StrCat("report: to step ", s.last_step)
                     : s.first_step == s.last_step
                         ? absl::StrCat("report: step ", s.last_step)
                         : absl::StrCat("report: steps ", s.first_step, "-", s.last_step);
  return Span(std::move(name), "report", s.pid, s.tid, s.begin_us, s.end_us, args.str());
}

// k consecutive reports as one span.
std::vector<ReportSpan> MergeReports(const std::vector<ReportSpan>& reports, int k) {
  if (k <= 1) return reports;
  std::vector<ReportSpan> out;
  for (size_t i = 0; i < reports.size(); i += k) {
    ReportSpan merged = reports[i];
    merged.reports = 0;
    merged.samples = 0;
    for (size_t j = i; j < std::min(reports.size(), i + k); ++j) {
      merged.end_us = reports[j].end_us;
      merged.last_step = reports[j].last_step;
      merged.loss = reports[j].loss;
      merged.samples += reports[j].samples;
      merged.reports += reports[j].reports;
    }
    out.push_back(merged);
  }
  return out;
}

// The thinned events (everything but `fixed`) at factor k, serialized.
std::vector<std::string> Thinned(const TraceParts& parts, int k) {
  std::vector<std::string> out;
  for (size_t i = 0; i < parts.instants.size(); i += k)
    out.push_back(TraceEventJson(parts.instants[i]));
  for (const auto& [rank, reports] : parts.reports) {
    for (const ReportSpan& s : MergeReports(reports, k))
      out.push_back(TraceEventJson(ReportEvent(s)));
  }
  for (const auto& [rank, spans] : parts.steps) {
    for (size_t i = 0; i < spans.size(); i += k) {
      for (const TraceEvent& e : StepEvents(spans[i])) out.push_back(TraceEventJson(e));
    }
  }
  return out;
}

size_t Bytes(const std::vector<std::string>& events) {
  size_t n = 0;
  for (const std::string& e : events) n += e.size() + 2;
  return n;
}

// The serialized size of each instant and each step group, measured once: a long job has
// millions, and the factor is searched without keeping their text.
struct Sizes {
  std::vector<size_t> instants;
  std::map<int, std::vector<size_t>> steps;
};

Sizes Measure(const TraceParts& parts) {
  Sizes sizes;
  for (const TraceEvent& e : parts.instants) sizes.instants.push_back(TraceEventJson(e).size() + 2);
  for (const auto& [rank, spans] : parts.steps) {
    std::vector<size_t>& mine = sizes.steps[rank];
    for (const StepSpan& s : spans) {
      size_t n = 0;
      for (const TraceEvent& e : StepEvents(s)) n += TraceEventJson(e).size() + 2;
      mine.push_back(n);
    }
  }
  return sizes;
}

// Bytes of what Thinned(parts, k) would return.
size_t ThinnedBytes(const TraceParts& parts, const Sizes& sizes, int k) {
  size_t n = 0;
  for (size_t i = 0; i < sizes.instants.size(); i += k) n += sizes.instants[i];
  for (const auto& [rank, reports] : parts.reports) {
    for (const ReportSpan& s : MergeReports(reports, k))
      n += TraceEventJson(ReportEvent(s)).size() + 2;
  }
  for (const auto& [rank, groups] : sizes.steps) {
    for (size_t i = 0; i < groups.size(); i += k) n += groups[i];
  }
  return n;
}

size_t Largest(const TraceParts& parts) {
  size_t n = parts.instants.size();
  for (const auto& [rank, reports] : parts.reports) n = std::max(n, reports.size());
  for (const auto& [rank, spans] : parts.steps) n = std::max(n, spans.size());
  return n;
}

}  // namespace

RenderedTrace RenderTrace(const TraceParts& parts, size_t limit_bytes) {
  RenderedTrace out;
  out.notes = parts.notes;
  std::vector<std::string> fixed;
  for (const TraceEvent& e : parts.fixed) fixed.push_back(TraceEventJson(e));
  const size_t fixed_bytes = Bytes(fixed);
  const size_t room =
      limit_bytes > fixed_bytes + kHeaderReserve ? limit_bytes - fixed_bytes - kHeaderReserve : 0;

  const Sizes sizes = Measure(parts);
  const size_t largest = Largest(parts);
  size_t bytes = ThinnedBytes(parts, sizes, 1);
  if (bytes > room) {
    // Most of the thinned bytes shrink k-fold: start near the factor that fits, then double.
    const size_t estimate = room > 0 ? bytes / room : largest;
    while (static_cast<size_t>(out.keep_one_in) * 2 <= std::min(estimate, largest))
      out.keep_one_in *= 2;
    bytes = ThinnedBytes(parts, sizes, out.keep_one_in);
  }
  while (bytes > room && static_cast<size_t>(out.keep_one_in) < largest) {
    out.keep_one_in *= 2;
    bytes = ThinnedBytes(parts, sizes, out.keep_one_in);
  }
  std::vector<std::string> thinned = Thinned(parts, out.keep_one_in);
  if (out.keep_one_in > 1) {
    out.notes.push_back(absl::StrCat(
        "thinned to stay below ", limit_bytes, " bytes: 1 recorded worker step in ",
        out.keep_one_in, " kept per rank, ", out.keep_one_in, " reports merged per span, 1 in ",
        out.keep_one_in, " of the launcher's other events kept; the job's lifecycle is whole"));
  }
  if (fixed_bytes + Bytes(thinned) + kHeaderReserve > limit_bytes) {
    out.notes.push_back(
        absl::StrCat("still above the ", limit_bytes,
                     "-byte limit: the job's lifecycle events alone are that large"));
  }

  std::vector<std::string> events = std::move(fixed);
  if (!out.notes.empty()) {
    TraceEvent note = Instant("trace notes", "meta", kLauncherPid, kLauncherTid, 0,
                              JsonLine().Add("notes", out.notes).str());
    note.scope = 'g';
    events.push_back(TraceEventJson(note));
  }
  events.insert(events.end(), thinned.begin(), thinned.end());

  JsonLine metadata;
  metadata.Add("generator", "dlaunch trace")
      .Add("job_id", parts.job_id)
      .Add("origin_unix_us", parts.origin_unix_us)
      .Add("size_limit_bytes", static_cast<int64_t>(limit_bytes))
      .Add("sampled", out.keep_one_in > 1)
      .Add("keep_one_in", out.keep_one_in)
      .Add("notes", out.notes);
  out.json = absl::StrCat("{\"displayTimeUnit\":\"ms\",\n\"metadata\":", metadata.str(),
                          ",\n\"traceEvents\":[\n");
  for (size_t i = 0; i < events.size(); ++i) {
    absl::StrAppend(&out.json, events[i], i + 1 < events.size() ? ",\n" : "\n");
  }
  out.json += "]}\n";
  return out;
}

}  // namespace dlaunch
