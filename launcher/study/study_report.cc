#include "launcher/study/study_report.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/exit_codes.h"
#include "common/json_line.h"

namespace dlaunch {

std::string HtmlEscape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

namespace {

// The CSV's cells as an HTML table, so the page and scaling.csv never disagree.
std::string HtmlTable(const std::vector<ScalingRow>& rows) {
  const std::string csv = ScalingCsv(rows);
  std::string out = "<table>\n";
  bool header = true;
  for (absl::string_view line : absl::StrSplit(csv, '\n', absl::SkipEmpty())) {
    const char* cell = header ? "th" : "td";
    absl::StrAppend(&out, "<tr>");
    for (absl::string_view v : absl::StrSplit(line, ',')) {
      const bool failed = absl::StartsWith(v, "failed");
      absl::StrAppend(&out, "<", cell, failed ? " class=\"failed\"" : "", ">",
                      HtmlEscape(std::string(v)), "</", cell, ">");
    }
    absl::StrAppend(&out, "</tr>\n");
    header = false;
  }
  return out + "</table>\n";
}

}  // namespace

std::string StudyReportHtml(const StudyInfo& info, const std::vector<ScalingRow>& rows,
                            const StudyPlots& plots) {
  const std::string title = HtmlEscape(absl::StrCat("Scaling study ", info.study_id));
  std::string out = absl::StrCat(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>", title,
      "</title>\n<style>\n"
      "body { font-family: sans-serif; margin: 2em; }\n"
      "table { border-collapse: collapse; }\n"
      "th, td { border: 1px solid #bbb; padding: 0.3em 0.6em; text-align: right; }\n"
      "td.failed { color: #b00; font-weight: bold; }\n"
      "img { max-width: 100%; border: 1px solid #ddd; margin: 0.5em 0; }\n"
      "</style>\n</head>\n<body>\n<h1>", title, "</h1>\n<p>Job spec <code>",
      HtmlEscape(info.spec_path), "</code>, started ", HtmlEscape(info.started), ".<br>\n<code>",
      HtmlEscape(info.command), "</code></p>\n<h2>Scaling table</h2>\n", HtmlTable(rows),
      "<p>Speedup and efficiency are against the successful scale with the fewest workers; "
      "time per epoch is the scale's wall time over its epochs. The same table is in "
      "<a href=\"scaling.csv\">scaling.csv</a> and <a href=\"scaling.md\">scaling.md</a>.</p>\n"
      "<h2>Plots</h2>\n");
  for (const std::string& p : plots.plots) {
    absl::StrAppend(&out, "<p><a href=\"", p, ".svg\"><img src=\"", p, ".png\" alt=\"", p,
                    " plot\" width=\"800\" height=\"500\"></a></p>\n");
  }
  for (const std::string& s : plots.skipped) {
    absl::StrAppend(&out, "<p>Not drawn: ", HtmlEscape(s), ".</p>\n");
  }
  return out + "</body>\n</html>\n";
}

int StudyExitCode(const std::vector<ScalingRow>& rows) {
  for (const ScalingRow& r : rows) {
    if (!r.ok) return r.exit_code != 0 ? r.exit_code : kExitJobFailed;
  }
  return kExitOk;
}

std::string StudyJson(const StudyInfo& info, const std::vector<ScalingRow>& rows,
                      const std::vector<ScaleOutcome>& outcomes, int exit_code) {
  std::string scales;
  for (size_t i = 0; i < rows.size() && i < outcomes.size(); ++i) {
    const ScalingRow& r = rows[i];
    JsonLine s;
    s.Add("label", r.label)
        .Add("nodes", r.nodes)
        .Add("procs_per_node", r.procs_per_node)
        .Add("workers", r.workers)
        .Add("run_dir", outcomes[i].run_dir)
        .Add("result", r.ok ? "succeeded" : "failed")
        .Add("exit_code", r.exit_code)
        .Add("wall_time_s", r.wall_time_s);
    if (r.samples_per_sec) s.Add("samples_per_sec", *r.samples_per_sec);
    if (r.speedup) s.Add("speedup", *r.speedup);
    if (r.efficiency) s.Add("efficiency", *r.efficiency);
    if (r.time_per_epoch_s) s.Add("time_per_epoch_s", *r.time_per_epoch_s);
    if (r.final_loss) s.Add("final_loss", *r.final_loss);
    if (r.test_accuracy) s.Add("test_accuracy", *r.test_accuracy);
    if (r.goodput) s.Add("goodput", *r.goodput);
    absl::StrAppend(&scales, scales.empty() ? "" : ",", s.str());
  }
  JsonLine j;
  j.Add("study_id", info.study_id)
      .Add("spec", info.spec_path)
      .Add("started", info.started)
      .Add("command", info.command)
      .Add("exit_code", exit_code)
      .AddRaw("scales", "[" + scales + "]");
  return j.str() + "\n";
}

}  // namespace dlaunch
