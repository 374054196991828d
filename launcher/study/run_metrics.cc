#include "launcher/study/run_metrics.h"

#include <algorithm>
#include <map>

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

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
  }
  // Each epoch end sends one report with the test accuracy (the same on every rank; rank 0's
  // are used). The agent may merge it with the following step reports, so a line's epoch field
  // (0-based, of its last step) is the completed epoch or the one before it: the k-th such line
  // is epoch max(k, epoch field), numbered from 1.
  std::map<int, double> accuracy;
  int completed = 0;
  for (absl::string_view line : absl::StrSplit(metrics_jsonl, '\n', absl::SkipWhitespace())) {
    Struct record;
    if (!ParseObject(std::string(line), &record)) continue;
    const auto rank = Number(record, "rank");
    if (!rank || *rank != 0) continue;
    const auto epoch = Number(record, "epoch");
    if (auto acc = Number(record, "test_accuracy")) {
      completed = std::max(completed + 1, epoch ? static_cast<int>(*epoch) : 0);
      accuracy[completed] = *acc;
    }
    const auto step = Number(record, "step");
    const auto loss = Number(record, "loss");
    if (step && loss) m.loss_by_step.emplace_back(*step, *loss);
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
