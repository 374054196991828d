// `dlaunch script` and `dlaunch submit`: render a job's batch script for a site, and write the
// job directory and hand the script to the scheduler. Each takes the arguments after its
// subcommand name and returns the exit code (common/exit_codes.h).
#pragma once

#include <string>
#include <vector>

namespace dlaunch {

// dlaunch script JOB.yaml [--site NAME]        print the batch script (nothing written)
int RunScriptCommand(const std::vector<std::string>& args);
// dlaunch submit JOB.yaml [--site NAME] [--dry-run]
//   checks, writes runs/<job-id>/{job.sh,job.yaml,submit.json}, submits, prints the job id
int RunSubmitCommand(const std::vector<std::string>& args);

}  // namespace dlaunch
