// `dlaunch validate job.yaml`: the spec checked (every problem as job.yaml:LINE:COL), the resolved
// job printed with every default filled in, and inside an allocation the hosts it would use.
#pragma once

#include <string>
#include <vector>

namespace dlaunch {

int RunValidateCommand(const std::vector<std::string>& args);

}  // namespace dlaunch
