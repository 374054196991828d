// AgentLogs: which node launcher started which agent, so that each agent's log in the job
// directory is named by its node id (logs/agent-<node id>.log) rather than by the order the
// launchers started in. A launcher's output goes to logs/launcher-<i>.log from its start; once
// the agent in it has a node id (the round closed, or it joined as a spare), the shell renames
// the file. A launcher that starts every agent at once (mpiexec, srun) keeps its one file, as
// does an agent that never got a node id (left out, or the round never closed).
//
// Pure: the shell gives the launchers' pids and hosts and renames what Claim names.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "rendezvous/rendezvous_state.h"

namespace dlaunch {

// One node launcher that starts one agent.
struct LaunchedAgent {
  pid_t pid = -1;    // the launcher's process; for a local agent, the agent itself
  std::string host;  // the host it starts the agent on (ssh); "" for this host (local)
};

class AgentLogs {
 public:
  // `launched`: one entry per node launcher, in launch order; empty when one launcher starts
  // every agent (mpiexec, srun).
  explicit AgentLogs(std::vector<LaunchedAgent> launched);

  // The launch index of `agent`'s launcher, claimed once; none when it cannot be told. A
  // local agent is its launcher's process (JoinRequest.agent_id holds its pid), unless a
  // wrapper started it without exec; an ssh launcher's agent is the one on its host, when no
  // other launcher starts one there. O(1): a round of 10,000 agents is named at its close.
  std::optional<int> Claim(const Participant& agent);

  static std::string LauncherLogName(int launch_index);  // "launcher-<i>.log"
  static std::string AgentLogName(int node_id);          // "agent-<node id>.log"

 private:
  std::optional<int> Find(const Participant& agent) const;

  // Launch indexes by a local launcher's pid, and by an ssh launcher's short host name (-1:
  // more than one launcher starts an agent there).
  std::unordered_map<pid_t, int> by_pid_;
  std::unordered_map<std::string, int> by_host_;
  std::vector<bool> claimed_;
};

// The launchers of a `node_launcher` kind ("local", "ssh", ...) that started processes `pids`
// for `agent_hosts` (HostPlan::AgentHosts, in launch order): one per agent for local and ssh;
// none for the others, which start every agent from one command.
std::vector<LaunchedAgent> LaunchedAgentsOf(const std::string& node_launcher,
                                            const std::vector<std::string>& agent_hosts,
                                            const std::vector<pid_t>& pids);

// The pid in an agent id ("host:pid:random"); none when it has no such part.
std::optional<pid_t> AgentPidOf(const std::string& agent_id);

}  // namespace dlaunch
