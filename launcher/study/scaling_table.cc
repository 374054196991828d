#include "launcher/study/scaling_table.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace dlaunch {
namespace {

std::string Fixed(const std::optional<double>& v, int digits) {
  return v ? absl::StrFormat("%.*f", digits, *v) : "n/a";
}

std::string Percent(const std::optional<double>& fraction) {
  return fraction ? absl::StrFormat("%.2f", *fraction * 100) : "n/a";
}

// The table's columns, in order: header and how to print a row's cell.
struct Column {
  const char* header;
  std::string (*cell)(const ScalingRow&);
};

const std::vector<Column>& Columns() {
  static const auto* columns = new std::vector<Column>{
      {"scale", [](const ScalingRow& r) { return r.label; }},
      {"nodes", [](const ScalingRow& r) { return absl::StrCat(r.nodes); }},
      {"procs_per_node",
       [](const ScalingRow& r) { return r.procs_per_node > 0 ? absl::StrCat(r.procs_per_node) : "gpu"; }},
      {"workers", [](const ScalingRow& r) { return r.workers > 0 ? absl::StrCat(r.workers) : "n/a"; }},
      {"status", RowStatus},
      {"samples_per_sec", [](const ScalingRow& r) { return Fixed(r.samples_per_sec, 1); }},
      {"samples_per_sec_per_worker",
       [](const ScalingRow& r) { return Fixed(r.samples_per_sec_per_worker, 1); }},
      {"speedup", [](const ScalingRow& r) { return Fixed(r.speedup, 2); }},
      {"efficiency_pct", [](const ScalingRow& r) { return Percent(r.efficiency); }},
      {"time_per_epoch_s", [](const ScalingRow& r) { return Fixed(r.time_per_epoch_s, 1); }},
      {"final_loss", [](const ScalingRow& r) { return Fixed(r.final_loss, 4); }},
      {"test_accuracy_pct", [](const ScalingRow& r) { return Percent(r.test_accuracy); }},
      {"goodput_pct", [](const ScalingRow& r) { return Percent(r.goodput); }},
      {"wall_time_s", [](const ScalingRow& r) { return absl::StrFormat("%.1f", r.wall_time_s); }},
  };
  return *columns;
}

std::vector<std::string> Cells(const ScalingRow& row) {
  std::vector<std::string> cells;
  for (const Column& c : Columns()) cells.push_back(c.cell(row));
  return cells;
}

}  // namespace

std::string RowStatus(const ScalingRow& row) {
  return row.ok ? "ok" : absl::StrCat("failed (exit ", row.exit_code, ")");
}

std::vector<ScalingRow> MakeScalingRows(const std::vector<ScaleOutcome>& outcomes) {
  std::vector<ScalingRow> rows;
  const ScalingRow* base = nullptr;
  for (const ScaleOutcome& o : outcomes) {
    ScalingRow r;
    r.label = o.scale.Label();
    r.nodes = o.scale.nodes;
    r.procs_per_node = o.scale.procs_per_node;
    r.workers = o.metrics.world_size.value_or(o.scale.workers());
    r.ok = o.exit_code == 0;
    r.exit_code = o.exit_code;
    r.wall_time_s = o.wall_time_s;
    r.final_loss = o.metrics.final_loss;
    r.test_accuracy = o.metrics.test_accuracy;
    r.goodput = o.metrics.goodput;
    if (o.metrics.epochs > 0) r.time_per_epoch_s = o.wall_time_s / o.metrics.epochs;
    r.samples_per_sec = o.metrics.samples_per_sec;
    if (r.samples_per_sec && r.workers > 0) {
      r.samples_per_sec_per_worker = *r.samples_per_sec / r.workers;
    }
    rows.push_back(r);
  }
  // Ratios against the successful row with a throughput and the fewest workers (pointers taken
  // after the vector stopped growing).
  for (const ScalingRow& r : rows) {
    if (r.ok && r.samples_per_sec && r.workers > 0 && (base == nullptr || r.workers < base->workers)) {
      base = &r;
    }
  }
  if (base == nullptr) return rows;
  const double base_rate = *base->samples_per_sec;
  const int base_workers = base->workers;
  for (ScalingRow& r : rows) {
    if (!r.ok || !r.samples_per_sec || r.workers <= 0) continue;
    r.speedup = *r.samples_per_sec / base_rate;
    r.efficiency = *r.speedup * base_workers / r.workers;
  }
  return rows;
}

std::string ScalingCsv(const std::vector<ScalingRow>& rows) {
  std::vector<std::string> headers;
  for (const Column& c : Columns()) headers.push_back(c.header);
  std::string out = absl::StrCat(absl::StrJoin(headers, ","), "\n");
  for (const ScalingRow& r : rows) absl::StrAppend(&out, absl::StrJoin(Cells(r), ","), "\n");
  return out;
}

std::string ScalingMarkdown(const std::vector<ScalingRow>& rows) {
  const std::vector<std::string> headers = {
      "scale", "nodes", "procs/node", "workers", "status", "samples/s", "samples/s per worker",
      "speedup", "efficiency %", "s/epoch", "final loss", "test acc. %", "goodput %", "wall s"};
  std::string out = absl::StrCat("| ", absl::StrJoin(headers, " | "), " |\n|");
  for (size_t i = 0; i < headers.size(); ++i) absl::StrAppend(&out, i == 0 ? ":---|" : "---:|");
  absl::StrAppend(&out, "\n");
  for (const ScalingRow& r : rows) absl::StrAppend(&out, "| ", absl::StrJoin(Cells(r), " | "), " |\n");
  return out;
}

}  // namespace dlaunch
