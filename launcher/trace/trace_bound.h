// RenderTrace: trace.json from the trace's parts, kept below a size limit. Beyond the limit a
// long job's timeline is thinned evenly by a factor k (doubled until it fits): one recorded
// worker step in k is kept per rank, k reports per rank are merged into one span, one in k of
// the launcher's other events is kept; the lifecycle (job, rendezvous, per-rank process spans,
// failures, stop) is always whole. The file's metadata says what was done.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "launcher/trace/trace_builder.h"

namespace dlaunch {

// A few MB: what Perfetto's UI and chrome://tracing open in a moment.
constexpr size_t kDefaultTraceLimitBytes = 4 << 20;

struct RenderedTrace {
  std::string json;
  int keep_one_in = 1;             // the thinning factor k; 1 when nothing was thinned
  std::vector<std::string> notes;  // as in the file's metadata
};

RenderedTrace RenderTrace(const TraceParts& parts, size_t limit_bytes = kDefaultTraceLimitBytes);

}  // namespace dlaunch
