#include "launcher/trace/trace_layout.h"

#include "launcher/trace/journal_events.h"
#include "launcher/trace/json_lines.h"

namespace dlaunch {

TraceLayout ReadTraceLayout(const TraceInput& in) {
  TraceLayout l;
  for (const v1::JobEvent& e : in.events) {
    const int64_t unix_us = ParseTimeMicros(e.time()).value_or(0);
    if (e.has_rendezvous_closed()) {
      const auto& c = e.rendezvous_closed();
      for (int i = 0; i < c.node_order_size(); ++i)
        l.AddHost(i < c.node_ids_size() ? c.node_ids(i) : i, c.node_order(i));
      continue;
    }
    const EventPlace p = PlaceOf(e);
    if (!p.host.empty()) l.AddHost(p.node_id, p.host);
    if (p.rank >= 0)
      l.AddRank(p.rank, p.node_id >= 0 ? std::optional<int>(p.node_id) : std::nullopt, unix_us);
  }
  for (const v1::MetricLine& m : in.metrics) l.AddRank(m.report().rank(), m.node_id(), MetricMicros(m));
  for (const auto& [rank, lines] : in.rank_steps) l.AddRank(rank, std::nullopt, 0);
  return l;
}

}  // namespace dlaunch
