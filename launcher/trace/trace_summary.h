// Where time went per rank, as `dlaunch trace JOB` prints it on one screen: steps, mean step
// time, each phase's share, time in checkpoints and evaluations, throughput, and the slowest
// rank. From dlaunch-worker's step traces where present (per rank, exact), else from the
// reports (whatever phase timings the worker sent). Pure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "launcher/trace/trace_builder.h"

namespace dlaunch {

struct RankTime {
  int rank = 0;
  int node = -1;
  bool from_step_trace = false;  // phases from trace/rank-N.jsonl, else from reports
  int64_t steps = 0;             // steps the phases stand for
  double step_ms = 0;            // total step time of those steps
  double data_ms = 0, forward_ms = 0, backward_ms = 0, optimizer_ms = 0;
  double other_ms = 0;  // checkpoints and evaluations between steps
  double samples = 0;   // from the reports
  double report_s = 0;  // wall time the reports cover
};

std::vector<RankTime> SummarizeRankTime(const TraceInput& input);

// `max_rows` ranks at most: the slowest first, then the fastest, and how many were left out.
std::string FormatTraceSummary(const std::string& trace_path, const std::vector<RankTime>& ranks,
                               const std::vector<std::string>& notes, size_t max_rows = 16);

}  // namespace dlaunch
