// `dlaunch trace JOB`: where the job's trace.json is (built from the job directory when it is
// missing or older than the journal) and where time went per rank.
#pragma once

#include <string>
#include <vector>

namespace dlaunch {

// dlaunch trace JOB [--rebuild]
int RunTraceCommand(const std::vector<std::string>& args);

}  // namespace dlaunch
