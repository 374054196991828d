// `dlaunch run` and `dlaunch doctor`: the interactive path from a job spec (or torchrun-style
// flags) to a finished job. Batch scripts run the same code on the allocation's first node.
#pragma once

#include <string>
#include <vector>

#include "launcher/cli/run_flags.h"

namespace dlaunch {

int RunRunCommand(const std::vector<std::string>& args);
// `dlaunch doctor`: the job's preflight on every node, as a table (docs/preflight.md).
extern const char kDoctorUsage[];
int RunDoctorCommand(const std::vector<std::string>& args);

}  // namespace dlaunch
