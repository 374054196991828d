// `dlaunch watch JOB`: the live table of a running job, from any host that sees its job
// directory, by asking the job's launcher (launcher.json's address) over its gRPC endpoint with
// the job token (the directory's `token`). Also the one snapshot `dlaunch status` shows of a
// running job.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace dlaunch {

// dlaunch watch JOB
int RunWatchCommand(const std::vector<std::string>& args);

// For `dlaunch status` of a job that has not ended: one snapshot from its launcher as a table,
// or a line saying why there is none. Nothing when launcher.json names no endpoint.
void PrintLiveStatus(const std::string& job_dir, std::ostream& out);

}  // namespace dlaunch
