// The study's summary files: report.html (the table and the plots on one page) and study.json
// (what ran, where its runs are, how each ended). Pure.
#pragma once

#include <string>
#include <vector>

#include "launcher/study/scaling_table.h"
#include "launcher/study/study_plots.h"

namespace dlaunch {

struct StudyInfo {
  std::string study_id;
  std::string spec_path;
  std::string started;   // RFC 3339
  std::string command;   // the command line that ran it, for the report
};

// A self-contained page: the table, each plot's PNG (linking its SVG), and the plots skipped.
std::string StudyReportHtml(const StudyInfo& info, const std::vector<ScalingRow>& rows,
                            const StudyPlots& plots);

// One JSON object: the study, its exit code and, per scale, its run directory and figures.
std::string StudyJson(const StudyInfo& info, const std::vector<ScalingRow>& rows,
                      const std::vector<ScaleOutcome>& outcomes, int exit_code);

// The study's exit code: 0 when every scale succeeded, else the first failing scale's code
// (130 when one was interrupted, so a Ctrl-C is reported as such).
int StudyExitCode(const std::vector<ScalingRow>& rows);

// & < > " escaped for HTML text and attribute values.
std::string HtmlEscape(const std::string& text);

}  // namespace dlaunch
