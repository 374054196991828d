// Each node's health over the job as counter tracks of trace.json (Chrome "C" events under the
// node's process): load, memory available and memory pressure, from metrics.jsonl's host lines.
#pragma once

#include <cstdint>
#include <vector>

#include "dlaunch/journal.pb.h"
#include "launcher/trace/trace_event.h"

namespace dlaunch {

// One counter event per figure and host line, timed from `origin_unix_us` (the trace's time 0).
std::vector<TraceEvent> HostCounters(const std::vector<v1::MetricLine>& hosts, int64_t origin_unix_us);

}  // namespace dlaunch
