// `dlaunch scale`: the scaling study. Runs the job once per scale, each a separate `dlaunch run`
// process (a failing scale cannot take the study down), and writes the table, plots and report.
#pragma once

#include <string>
#include <vector>

namespace dlaunch {

int RunScaleCommand(const std::vector<std::string>& args);

}  // namespace dlaunch
