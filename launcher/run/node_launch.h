// How one agent per node is started: the commands for each node launcher kind (pure).
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace dlaunch {

struct NodeLaunchInput {
  std::string kind;                       // local, ssh, mpiexec, mpirun, srun
  std::vector<std::string> hosts;         // in node-rank order
  std::vector<std::string> agent_argv;    // the agent command, same on every node
  std::vector<std::string> prefix;        // overrides the kind's default prefix (mpiexec/mpirun/srun)
  std::string hostfile;                   // file listing `hosts`, for mpiexec/mpirun
  std::string ssh = "ssh";                // ssh program (DLAUNCH_SSH)
  std::string workdir;                    // ssh: directory to cd into on the remote node
};

// One command per node for local and ssh; one command for the whole job for the MPI
// launchers and srun (which then start one agent per node themselves).
absl::StatusOr<std::vector<std::vector<std::string>>> BuildNodeLaunchCommands(
    const NodeLaunchInput& in);

}  // namespace dlaunch
