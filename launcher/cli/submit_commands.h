// The batch-side subcommands of `dlaunch`: script, submit, status, logs, cancel. Each takes
// the arguments after its subcommand name, prints a usage on bad arguments and returns the
// process exit code (0 ok, 2 bad usage or invalid job/site, 3 scheduler error).
#pragma once

#include <string>
#include <vector>

namespace dlaunch {

// dlaunch script JOB.yaml [--site NAME]        print the batch script (nothing written)
int RunScriptCommand(const std::vector<std::string>& args);
// dlaunch submit JOB.yaml [--site NAME] [--dry-run]
//   checks, writes runs/<job-id>/{job.sh,job.yaml,submit.json}, submits, prints the job id
int RunSubmitCommand(const std::vector<std::string>& args);
// dlaunch status [JOB]                          one job in detail, or recent jobs
int RunStatusCommand(const std::vector<std::string>& args);
// dlaunch logs JOB [--rank N] [--follow]
int RunLogsCommand(const std::vector<std::string>& args);
// dlaunch cancel JOB                            scheduler (qdel/scancel) and running launcher
int RunCancelCommand(const std::vector<std::string>& args);

}  // namespace dlaunch
