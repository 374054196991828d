#include "launcher/study/run_metrics.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "launcher/jobdir/journal.h"

namespace dlaunch {
absl::StatusOr<RunMetrics> ParseRunMetrics(const std::string& summary_json,
                                           const std::string& metrics_jsonl) {
  RunMetrics m;
  if (!absl::StripAsciiWhitespace(summary_json).empty()) {
    absl::StatusOr<JobSummaryFile> read = ParseJobSummary(summary_json);
    if (!read.ok()) return read.status();
    const v1::JobSummary& summary = read->summary;
    if (summary.world_size() > 0) m.world_size = summary.world_size();
    // A job whose workers never reported counts zero samples: its throughput is unknown, not 0.
    if (summary.samples() > 0 && summary.samples_per_sec() > 0) {
      m.samples_per_sec = summary.samples_per_sec();
    }
    if (summary.has_final_loss()) m.final_loss = summary.final_loss().value();
    if (summary.has_test_accuracy()) m.test_accuracy = summary.test_accuracy().value();
    // A run whose ranks sent no step reports has no productive figure to speak of.
    if (summary.has_goodput() &&
        summary.goodput().split().productive().basis() != v1::NOT_KNOWN) {
      m.goodput = summary.goodput().goodput();
    }
  }
  // Each epoch end sends one report with the test accuracy (the same on every rank; rank 0's
  // are used). The agent may merge it with the following step reports, so a line's epoch field
  // (0-based, of its last step) is the completed epoch or the one before it: the k-th such line
  // is epoch max(k, epoch field), numbered from 1.
  std::map<int, double> accuracy;
  int completed = 0;
  for (const v1::MetricLine& line : ParseMetricJournal(metrics_jsonl).metrics) {
    const v1::WorkerReport& r = line.report();
    if (r.rank() != 0) continue;
    if (r.has_test_accuracy()) {
      completed = std::max(completed + 1, r.epoch());
      accuracy[completed] = r.test_accuracy();
    }
    m.loss_by_step.emplace_back(static_cast<double>(r.step()), r.loss());
  }
  m.accuracy_by_epoch.assign(accuracy.begin(), accuracy.end());
  m.epochs = completed;
  std::sort(m.loss_by_step.begin(), m.loss_by_step.end());
  if (!m.test_accuracy && !m.accuracy_by_epoch.empty()) {
    m.test_accuracy = m.accuracy_by_epoch.back().second;
  }
  return m;
}

}  // namespace dlaunch
