// What one scale's job directory says about its run: summary.json and metrics.jsonl read into
// the figures a scaling table and its plots need. Pure (text in, figures out).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace dlaunch {

struct RunMetrics {
  std::optional<int> world_size;             // from summary.json
  std::optional<double> samples_per_sec;     // total; absent when no worker reported
  std::optional<double> final_loss;
  std::optional<double> test_accuracy;       // fraction, 0..1
  // Productive seconds over wall seconds, from summary.json's goodput account (docs/goodput.md);
  // absent when the run has none or its ranks sent no step reports.
  std::optional<double> goodput;
  int epochs = 0;                            // epochs completed per the reports (0 = unknown)
  std::vector<std::pair<int, double>> accuracy_by_epoch;  // (epoch from 1, test accuracy)
  std::vector<std::pair<double, double>> loss_by_step;    // rank 0's (step, loss)
};

// Reads summary.json's text (may be "" when the run left none) and metrics.jsonl's text (through
// the journal's reader, launcher/jobdir/journal.h). Lines of metrics.jsonl that are not records
// are skipped (a run killed mid-write leaves half a line); a summary.json that is not a JSON
// object is DataLoss.
absl::StatusOr<RunMetrics> ParseRunMetrics(const std::string& summary_json,
                                           const std::string& metrics_jsonl);

}  // namespace dlaunch
