// `dlaunch run` and `dlaunch validate`: the interactive path from a job spec (or torchrun-style
// flags) to a finished job. Batch scripts run the same code on the allocation's first node.
#pragma once

#include <string>
#include <vector>

#include "launcher/cli/run_flags.h"

namespace dlaunch {

int RunRunCommand(const std::vector<std::string>& args);
int RunValidateCommand(const std::vector<std::string>& args);

}  // namespace dlaunch
