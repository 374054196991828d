#include "launcher/study/run_metrics.h"

#include <algorithm>
#include <map>

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "launcher/jobdir/journal.h"

namespace dlaunch {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

bool ParseObject(const std::string& text, Struct* out) {
  return google::protobuf::util::JsonStringToMessage(text, out).ok();
}

std::optional<double> Number(const Struct& s, const std::string& key) {
  auto it = s.fields().find(key);
  if (it == s.fields().end() || it->second.kind_case() != Value::kNumberValue) return std::nullopt;
  return it->second.number_value();
}

}  // namespace

absl::StatusOr<RunMetrics> ParseRunMetrics(const std::string& summary_json,
                                           const std::string& metrics_jsonl) {
  RunMetrics m;
  if (!absl::StripAsciiWhitespace(summary_json).empty()) {
    Struct summary;
    if (!ParseObject(summary_json, &summary)) {
      return absl::DataLossError("summary.json is not a JSON object");
    }
    if (auto w = Number(summary, "world_size")) m.world_size = static_cast<int>(*w);
    // A job whose workers never reported counts zero samples: its throughput is unknown, not 0.
    auto samples = Number(summary, "samples");
    auto rate = Number(summary, "samples_per_sec");
    if (samples && *samples > 0 && rate && *rate > 0) m.samples_per_sec = rate;
    m.final_loss = Number(summary, "final_loss");
    m.test_accuracy = Number(summary, "test_accuracy");
    if (auto g = summary.fields().find("goodput");
        g != summary.fields().end() && g->second.kind_case() == Value::kStructValue) {
      const Struct& account = g->second.struct_value();
      // A run whose ranks sent no step reports has no productive figure to speak of.
      const Struct* productive = nullptr;
      if (auto s = account.fields().find("split"); s != account.fields().end()) {
        auto p = s->second.struct_value().fields().find("productive");
        if (p != s->second.struct_value().fields().end()) productive = &p->second.struct_value();
      }
      auto basis = productive ? productive->fields().find("basis") : account.fields().end();
      const bool not_known = productive && basis != productive->fields().end() &&
                             basis->second.string_value() == "NOT_KNOWN";
      if (!not_known) m.goodput = Number(account, "goodput");
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
