// The scaling table: one row per scale (workers, throughput total and per worker, speedup,
// efficiency, time per epoch, final loss and test accuracy, goodput, wall time), as CSV and Markdown.
// Pure.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launcher/study/run_metrics.h"
#include "launcher/study/scale_plan.h"

namespace dlaunch {

// One scale as it ran.
struct ScaleOutcome {
  Scale scale;
  std::string run_dir;     // the scale's job directory, relative to the study directory
  int exit_code = 0;       // of its `dlaunch run`
  double wall_time_s = 0;  // measured by the study around the whole run
  RunMetrics metrics;
};

struct ScalingRow {
  std::string label;
  int nodes = 0;
  int procs_per_node = 0;
  int workers = 0;
  bool ok = false;                           // exit code 0
  int exit_code = 0;
  double wall_time_s = 0;
  std::optional<double> samples_per_sec;     // total
  std::optional<double> samples_per_sec_per_worker;
  std::optional<double> speedup;             // throughput over the baseline's
  std::optional<double> efficiency;          // speedup / (workers / baseline workers)
  std::optional<double> time_per_epoch_s;    // wall time / epochs
  std::optional<double> final_loss;
  std::optional<double> test_accuracy;
  std::optional<double> goodput;             // productive / wall time of the run (0..1)
};

// Rows in the order of `outcomes`. The baseline is the successful scale with a throughput and
// the fewest workers; rows without a throughput (no reports, or failed) have none of the ratios.
std::vector<ScalingRow> MakeScalingRows(const std::vector<ScaleOutcome>& outcomes);

// Header plus one line per row; unknown figures are "n/a", status is "ok" or "failed (exit N)".
std::string ScalingCsv(const std::vector<ScalingRow>& rows);
std::string ScalingMarkdown(const std::vector<ScalingRow>& rows);

// "failed (exit 1)" or "ok".
std::string RowStatus(const ScalingRow& row);

}  // namespace dlaunch
