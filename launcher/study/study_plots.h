// The study's plots as gnuplot input: data files and one script that draws each plot as PNG
// (pngcairo) and SVG. gnuplot runs headless from Debian's gnuplot-nox; the text is pure.
#pragma once

#include <string>
#include <vector>

#include "launcher/study/scaling_table.h"

namespace dlaunch {

struct TextFile {
  std::string name;  // relative to the study directory
  std::string text;
};

struct StudyPlots {
  std::vector<TextFile> data_files;
  std::string script;               // gnuplot commands; run with the study directory as cwd
  std::vector<std::string> plots;   // base names drawn (each as .png and .svg), in report order
  std::vector<std::string> skipped; // "accuracy: no test accuracy was reported", ...
};

// Throughput vs workers with the ideal line, efficiency vs workers, test accuracy vs epoch per
// scale, loss vs step per scale. A plot without data is skipped and says why. `rows` and
// `outcomes` are parallel (MakeScalingRows(outcomes)).
StudyPlots MakeStudyPlots(const std::vector<ScalingRow>& rows,
                          const std::vector<ScaleOutcome>& outcomes);

}  // namespace dlaunch
