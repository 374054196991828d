#include "launcher/job/metrics_cadence.h"

#include <cmath>
#include <utility>

#include "proto/report_merge.h"

namespace dlaunch {

double MetricsCadence::IntervalFor(int ranks, double heartbeat_s) {
  if (heartbeat_s <= 0 || ranks / heartbeat_s <= kLinesPerSecond) return 0;
  return ranks / kLinesPerSecond * heartbeat_s;
}

bool MetricsCadence::SetInterval(double interval_s) {
  const double before = interval_s_;
  interval_s_ = interval_s;
  if ((before > 0) != (interval_s > 0)) return true;
  return std::abs(interval_s - before) > 0.1 * before;
}

std::optional<MetricsCadence::Line> MetricsCadence::Add(int rank, int node, int round,
                                                        const v1::WorkerReport& report,
                                                        double now_s) {
  if (interval_s_ <= 0 && held_.empty()) {
    ++lines_;
    return Line{rank, node, round, report};
  }
  auto [it, first] = held_.try_emplace(rank);
  Held& held = it->second;
  // A rank's first line comes at once, so a short job still has one per rank.
  if (first) held.written_at_s = now_s - interval_s_;
  if (held.reports > 0 && held.line.round != round) {
    // A report of the next round: the held one is written first, whatever its interval.
    std::optional<Line> earlier = Take(held);
    held.line = Line{rank, node, round, report};
    held.reports = 1;
    held.written_at_s = now_s;
    return earlier;  // the new one waits its interval
  }
  if (held.reports == 0) {
    held.line = Line{rank, node, round, report};
  } else {
    held.line.report = MergeReports(held.line.report, report);
    held.line.node = node;
    ++folded_;
  }
  ++held.reports;
  if (now_s - held.written_at_s < interval_s_) return std::nullopt;
  held.written_at_s = now_s;
  return Take(held);
}

std::optional<MetricsCadence::Line> MetricsCadence::Take(Held& held) {
  if (held.reports == 0) return std::nullopt;
  held.reports = 0;
  ++lines_;
  return std::move(held.line);
}

std::optional<MetricsCadence::Line> MetricsCadence::Flush(int rank) {
  auto it = held_.find(rank);
  if (it == held_.end()) return std::nullopt;
  return Take(it->second);
}

std::vector<MetricsCadence::Line> MetricsCadence::FlushAll() {
  std::vector<Line> out;
  for (auto& [rank, held] : held_) {
    if (std::optional<Line> line = Take(held)) out.push_back(*std::move(line));
  }
  return out;
}

}  // namespace dlaunch
