#include "launcher/study/study_plots.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace dlaunch {
namespace {

struct Terminal {
  const char* extension;
  const char* setting;
};

// PNG for the report and quick viewing, SVG for papers and slides; the same size for both.
constexpr Terminal kTerminals[] = {
    {"png", "set terminal pngcairo size 800,500 enhanced font 'sans,11'"},
    {"svg", "set terminal svg size 800,500 enhanced font 'sans,11' background rgb 'white'"},
};

std::string WorkersTitle(const ScalingRow& row) {
  return absl::StrCat(row.workers, row.workers == 1 ? " worker" : " workers", " (", row.label, ")");
}

// The rows with a throughput, by workers: "workers samples/s ideal efficiency%".
std::vector<const ScalingRow*> ThroughputRows(const std::vector<ScalingRow>& rows) {
  std::vector<const ScalingRow*> out;
  for (const ScalingRow& r : rows) {
    if (r.speedup && r.efficiency && *r.efficiency > 0) out.push_back(&r);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const ScalingRow* a, const ScalingRow* b) { return a->workers < b->workers; });
  return out;
}

std::string ThroughputData(const std::vector<const ScalingRow*>& rows) {
  std::string out = "# workers samples_per_sec ideal_samples_per_sec efficiency_pct\n";
  for (const ScalingRow* r : rows) {
    absl::StrAppendFormat(&out, "%d %.3f %.3f %.3f\n", r->workers, *r->samples_per_sec,
                          *r->samples_per_sec / *r->efficiency, *r->efficiency * 100);
  }
  return out;
}

// Axis settings shared by the two plots over workers: log2 x with a tic at every scale.
std::string WorkersAxis(const std::vector<const ScalingRow*>& rows) {
  std::vector<std::string> tics;
  int most = 1;
  for (const ScalingRow* r : rows) {
    tics.push_back(absl::StrCat(r->workers));
    most = std::max(most, r->workers);
  }
  return absl::StrFormat(
      "set logscale x 2\nset xrange [0.8:%g]\nset xtics (%s)\nset xlabel 'workers'\n"
      "set grid\nset key top left\n",
      most * 1.25, absl::StrJoin(tics, ", "));
}

struct Plot {
  std::string name;
  std::string body;  // settings and the plot command, after the terminal is set
};

}  // namespace

StudyPlots MakeStudyPlots(const std::vector<ScalingRow>& rows,
                          const std::vector<ScaleOutcome>& outcomes) {
  StudyPlots out;
  std::vector<Plot> plots;
  const std::vector<const ScalingRow*> rated = ThroughputRows(rows);
  if (rated.empty()) {
    out.skipped.push_back("throughput and efficiency: no scale reported a throughput");
  } else {
    out.data_files.push_back({"throughput.dat", ThroughputData(rated)});
    plots.push_back({"throughput", absl::StrCat(
        WorkersAxis(rated),
        "set title 'Throughput vs workers'\nset ylabel 'samples/s (all workers)'\n"
        "set yrange [0:*]\n",
        "plot 'throughput.dat' using 1:2 with linespoints lw 2 pt 7 title 'measured', \\\n"
        "     'throughput.dat' using 1:3 with lines dt 2 lw 2 title 'ideal (linear from the "
        "baseline)'\n")});
    plots.push_back({"efficiency", absl::StrCat(
        WorkersAxis(rated),
        "set title 'Scaling efficiency vs workers'\nset ylabel 'efficiency (%)'\n"
        "set yrange [0:*]\n",
        "plot 'throughput.dat' using 1:4 with linespoints lw 2 pt 7 title 'measured', \\\n"
        "     100 with lines dt 2 lw 2 title 'ideal'\n")});
  }
  std::vector<std::string> accuracy_plots, loss_plots;
  for (size_t i = 0; i < outcomes.size() && i < rows.size(); ++i) {
    const RunMetrics& m = outcomes[i].metrics;
    const std::string label = rows[i].label;
    if (!m.accuracy_by_epoch.empty()) {
      std::string data = "# epoch test_accuracy_pct\n";
      for (const auto& [epoch, acc] : m.accuracy_by_epoch) {
        absl::StrAppendFormat(&data, "%d %.4f\n", epoch, acc * 100);
      }
      const std::string file = absl::StrCat("accuracy-", label, ".dat");
      out.data_files.push_back({file, data});
      accuracy_plots.push_back(absl::StrCat("'", file, "' using 1:2 with linespoints lw 2 pt 7 title '",
                                            WorkersTitle(rows[i]), "'"));
    }
    if (!m.loss_by_step.empty()) {
      std::string data = "# step loss (rank 0)\n";
      for (const auto& [step, loss] : m.loss_by_step) absl::StrAppendFormat(&data, "%g %.5f\n", step, loss);
      const std::string file = absl::StrCat("loss-", label, ".dat");
      out.data_files.push_back({file, data});
      loss_plots.push_back(absl::StrCat("'", file, "' using 1:2 with lines lw 2 title '",
                                        WorkersTitle(rows[i]), "'"));
    }
  }
  if (accuracy_plots.empty()) {
    out.skipped.push_back("test accuracy: no scale reported a test accuracy");
  } else {
    plots.push_back({"accuracy", absl::StrCat(
        "set title 'Test accuracy vs epoch'\nset xlabel 'epoch'\nset ylabel 'test accuracy (%)'\n"
        "set grid\nset key bottom right\nset xtics 1\nset offsets 0.2, 0.2, 0, 0\n",
        "plot ", absl::StrJoin(accuracy_plots, ", \\\n     "), "\n")});
  }
  if (loss_plots.empty()) {
    out.skipped.push_back("loss: no scale reported a loss");
  } else {
    plots.push_back({"loss", absl::StrCat(
        "set title 'Training loss vs step (rank 0)'\nset xlabel 'step'\nset ylabel 'loss'\n"
        "set grid\nset key top right\n",
        "plot ", absl::StrJoin(loss_plots, ", \\\n     "), "\n")});
  }
  out.script = "# Drawn by dlaunch scale; rerun with `gnuplot plots.gp` in this directory.\n";
  for (const Terminal& t : kTerminals) {
    for (const Plot& p : plots) {
      absl::StrAppend(&out.script, "reset\n", t.setting, "\nset output '", p.name, ".",
                      t.extension, "'\n", p.body, "unset output\n");
    }
  }
  for (const Plot& p : plots) out.plots.push_back(p.name);
  return out;
}

}  // namespace dlaunch
