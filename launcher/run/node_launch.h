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
  std::string scheduler;                  // the allocation's ("pbs", ...); picks mpiexec's dialect
  // local and ssh: node i's agent gets control_per_node[i] as its --control (its relay,
  // docs/relays.md). The MPI launchers and srun start one command: agents pick from the list.
  std::vector<std::string> control_per_node;
};

// One command per node for local and ssh; one command for the whole job for the MPI
// launchers and srun (which then start one agent per node themselves).
// The default commands ask the launcher not to bind the agent: the agent pins each worker to
// its own cores, and a binding of the agent would only narrow what it may hand out. mpiexec
// has two dialects: under PBS it is taken to be HPE's PALS (Polaris, Aurora: `--cpu-bind
// none`), elsewhere MPICH's hydra (`-bind-to none`; hydra refuses PALS' spelling). A `prefix`
// is used as given.
absl::StatusOr<std::vector<std::vector<std::string>>> BuildNodeLaunchCommands(
    const NodeLaunchInput& in);

}  // namespace dlaunch
