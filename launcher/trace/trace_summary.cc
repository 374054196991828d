#include "launcher/trace/trace_summary.h"

#include <algorithm>
#include <array>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace dlaunch {
namespace {

double MeanStepMs(const RankTime& r) { return r.steps > 0 ? r.step_ms / r.steps : 0; }

// One row of the table: every cell right-aligned under its heading.
constexpr size_t kWidths[] = {5, 5, 7, 9, 8, 8, 10, 8, 12, 10};

std::string Cells(const std::array<std::string, 10>& cells) {
  std::string out;
  for (size_t i = 0; i < cells.size(); ++i) {
    if (i > 0) out += ' ';
    out += std::string(kWidths[i] > cells[i].size() ? kWidths[i] - cells[i].size() : 0, ' ');
    out += cells[i];
  }
  return out;
}

std::string Share(double part, double whole) {
  return whole > 0 ? absl::StrFormat("%.1f%%", 100 * part / whole) : "-";
}

std::string Row(const RankTime& r) {
  const double phases = r.data_ms + r.forward_ms + r.backward_ms + r.optimizer_ms;
  const double whole = std::max(phases, r.step_ms);
  return Cells({absl::StrCat(r.rank), r.node >= 0 ? absl::StrCat(r.node) : "?",
                absl::StrCat(r.steps), absl::StrFormat("%.2f", MeanStepMs(r)),
                Share(r.data_ms, whole), Share(r.forward_ms, whole), Share(r.backward_ms, whole),
                Share(r.optimizer_ms, whole), absl::StrFormat("%.2f", r.other_ms / 1000),
                absl::StrFormat("%.1f", r.report_s > 0 ? r.samples / r.report_s : 0.0)}) +
         (r.from_step_trace ? "\n" : "  (reports)\n");
}

}  // namespace

std::vector<RankTime> SummarizeRankTime(const TraceInput& in) {
  std::map<int, RankTime> ranks;
  std::map<int, int64_t> last_step;
  for (const v1::MetricLine& line : in.metrics) {
    const v1::WorkerReport& m = line.report();
    RankTime& r = ranks[m.rank()];
    r.rank = m.rank();
    r.node = line.node_id();
    r.samples += static_cast<double>(m.samples());
    r.report_s += m.interval_s();
    auto it = last_step.emplace(r.rank, 0).first;
    // A restarted worker reports from an earlier step again: count only steps that moved on.
    if (m.step() > it->second) r.steps += m.step() - it->second;
    it->second = std::max<int64_t>(it->second, m.step());
    r.step_ms += m.interval_s() * 1000;
    r.data_ms += m.timings().data_ms();
    r.forward_ms += m.timings().forward_ms();
    r.backward_ms += m.timings().backward_ms() + m.timings().comm_wait_ms();
    r.optimizer_ms += m.timings().optimizer_ms();
  }
  for (const auto& [rank, trace] : in.rank_steps) {
    RankTime& r = ranks[rank];
    r.rank = rank;
    r.from_step_trace = true;
    r.steps = 0;
    r.step_ms = r.data_ms = r.forward_ms = r.backward_ms = r.optimizer_ms = r.other_ms = 0;
    for (const StepRow& s : trace.rows) {
      if (!s.span.empty()) {
        r.other_ms += s.dur_us / 1000.0;
        continue;
      }
      // A sampled step stands for `stride` steps.
      const double k = static_cast<double>(s.stride) / 1000;
      r.steps += s.stride;
      r.data_ms += k * s.data_us;
      r.forward_ms += k * s.forward_us;
      r.backward_ms += k * s.backward_us;
      r.optimizer_ms += k * s.optimizer_us;
      r.step_ms += k * (s.data_us + s.forward_us + s.backward_us + s.optimizer_us);
    }
  }
  std::vector<RankTime> out;
  for (auto& [rank, r] : ranks) out.push_back(r);
  return out;
}

std::string FormatTraceSummary(const std::string& trace_path, const std::vector<RankTime>& ranks,
                               const std::vector<std::string>& notes, size_t max_rows) {
  std::string out = absl::StrCat(
      "trace: ", trace_path,
      "\n  open it in https://ui.perfetto.dev (Open trace file) or chrome://tracing\n");
  for (const std::string& n : notes) absl::StrAppend(&out, "  note: ", n, "\n");
  if (ranks.empty()) return out + "no worker reported steps: nothing to summarize per rank\n";

  std::vector<RankTime> by_time = ranks;
  std::stable_sort(by_time.begin(), by_time.end(), [](const RankTime& a, const RankTime& b) {
    return MeanStepMs(a) > MeanStepMs(b);
  });
  absl::StrAppend(&out,
                  "\nwhere time went per rank (share of step time; ckpt/eval between steps):\n",
                  Cells({"rank", "node", "steps", "step ms", "data", "forward", "backwd+ar",
                         "optim", "ckpt/eval s", "samples/s"}),
                  "\n");
  std::vector<RankTime> shown = by_time;
  if (by_time.size() > max_rows) {
    // The slowest are what a user looks for; a few of the fastest show the spread.
    const size_t fastest = max_rows / 4, slowest = max_rows - fastest;
    shown.assign(by_time.begin(), by_time.begin() + slowest);
    shown.insert(shown.end(), by_time.end() - fastest, by_time.end());
  }
  for (size_t i = 0; i < shown.size(); ++i) {
    if (by_time.size() > max_rows && i == max_rows - max_rows / 4) {
      absl::StrAppend(&out, "  ... ", by_time.size() - max_rows, " rank(s) not shown\n");
    }
    out += Row(shown[i]);
  }
  const RankTime& slow = by_time.front();
  const RankTime& fast = by_time.back();
  if (MeanStepMs(slow) > 0) {
    absl::StrAppendFormat(&out, "slowest rank: %d (%.2f ms per step", slow.rank, MeanStepMs(slow));
    if (by_time.size() > 1 && MeanStepMs(fast) > 0) {
      absl::StrAppendFormat(&out, ", %.0f%% above the fastest, rank %d",
                            100 * (MeanStepMs(slow) / MeanStepMs(fast) - 1), fast.rank);
    }
    out += ")\n";
  }
  return out;
}

}  // namespace dlaunch
