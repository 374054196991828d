// `dlaunch status`, `dlaunch logs` and `dlaunch cancel`: look at and stop a job through its job
// directory (and its scheduler). Each takes the arguments after its subcommand name and returns
// the exit code (common/exit_codes.h).
#pragma once

#include <string>
#include <vector>

namespace dlaunch {

// dlaunch status [JOB]                          one job in detail, or recent jobs
int RunStatusCommand(const std::vector<std::string>& args);
// dlaunch logs JOB [--rank N] [--follow]
int RunLogsCommand(const std::vector<std::string>& args);
// dlaunch cancel JOB                            scheduler (qdel/scancel) and running launcher
int RunCancelCommand(const std::vector<std::string>& args);

}  // namespace dlaunch
