#include "launcher/trace/host_counters.h"

#include "absl/strings/str_format.h"
#include "launcher/trace/journal_events.h"
#include "launcher/trace/trace_builder.h"

namespace dlaunch {
namespace {

TraceEvent Counter(const char* name, int node, int64_t ts_us, double value) {
  TraceEvent e;
  e.name = name;
  e.cat = "host";
  e.ph = 'C';
  e.ts_us = ts_us;
  e.pid = NodePid(node);
  e.tid = NodeTid(node);
  e.args_json = absl::StrFormat("{\"value\":%.3f}", value);
  return e;
}

}  // namespace

std::vector<TraceEvent> HostCounters(const std::vector<v1::MetricLine>& hosts, int64_t origin_unix_us) {
  std::vector<TraceEvent> out;
  for (const v1::MetricLine& m : hosts) {
    if (!m.has_host()) continue;
    const v1::HostSample& h = m.host();
    const int64_t ts = MetricMicros(m) - origin_unix_us;
    if (ts < 0) continue;
    out.push_back(Counter("load (1 min)", m.node_id(), ts, h.load1()));
    out.push_back(Counter("memory available (GiB)", m.node_id(), ts, h.mem_available_kb() / 1048576.0));
    if (h.mem_pressure_pct() >= 0) {
      out.push_back(Counter("memory pressure (%)", m.node_id(), ts, h.mem_pressure_pct()));
    }
  }
  return out;
}

}  // namespace dlaunch
