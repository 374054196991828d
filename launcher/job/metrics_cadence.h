// MetricsCadence: how often a rank's reports become lines of metrics.jsonl. Up to
// kLinesPerSecond reports a second (ranks / heartbeat), each report is a line, as it comes.
// Past that, a rank's reports are folded together (proto/report_merge.h: samples and the
// interval add up, the step and loss are the latest) and written once per interval(), chosen so
// that the journal takes about kLinesPerSecond lines a second at any size: at 40,000 ranks and a
// 1 s heartbeat, one line per rank every 10 s, 4,000 lines a second instead of 40,000 (3.6 MB/s,
// 13 GB an hour). Nothing is dropped: every sample is in a line, and what a reader sums
// (samples, busy seconds) comes out the same; only the time resolution of a line is coarser.
// What is held is written at a rank's end, at the round's end and at the job's end. Pure.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "dlaunch/report.pb.h"

namespace dlaunch {

class MetricsCadence {
 public:
  static constexpr double kLinesPerSecond = 4000;

  // A report to journal: its node and round, as a line of metrics.jsonl has them.
  struct Line {
    int rank = 0;
    int node = 0;
    int round = 0;
    v1::WorkerReport report;
  };

  // 0 (every report a line) up to kLinesPerSecond reports a second, else ranks / kLinesPerSecond
  // x heartbeat seconds.
  static double IntervalFor(int ranks, double heartbeat_s);

  // Sets the interval for what comes next (a new round's size); what is held keeps its place.
  // True when the change is worth saying: folding starts or stops, or the interval moves by
  // more than a tenth (not a restart that lost one node of forty thousand ranks).
  bool SetInterval(double interval_s);
  double interval() const { return interval_s_; }

  // A report of `rank`: the line to write now (the reports held since the last line folded
  // with it), or nothing while the rank's interval runs.
  std::optional<Line> Add(int rank, int node, int round, const v1::WorkerReport& report,
                          double now_s);
  // The held reports of one rank (its end), or of every rank (the round's or job's end).
  std::optional<Line> Flush(int rank);
  std::vector<Line> FlushAll();

  // Reports folded into another's line so far, and lines written.
  int64_t folded() const { return folded_; }
  int64_t lines() const { return lines_; }

 private:
  struct Held {
    Line line;
    int reports = 0;          // folded into `line` so far
    double written_at_s = 0;  // when the rank's last line was written
  };
  std::optional<Line> Take(Held& held);

  double interval_s_ = 0;
  std::map<int, Held> held_;  // by rank; an entry with reports == 0 holds nothing
  int64_t folded_ = 0;
  int64_t lines_ = 0;
};

}  // namespace dlaunch
