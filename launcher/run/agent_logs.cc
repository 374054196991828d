#include "launcher/run/agent_logs.h"

#include <algorithm>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/host_identity.h"

namespace dlaunch {

AgentLogs::AgentLogs(std::vector<LaunchedAgent> launched)
    : launched_(std::move(launched)), claimed_(launched_.size(), false) {}

std::optional<int> AgentLogs::Claim(const Participant& agent) {
  const std::optional<pid_t> pid = AgentPidOf(agent.agent_id);
  std::optional<int> found;
  for (size_t i = 0; i < launched_.size(); ++i) {
    const LaunchedAgent& l = launched_[i];
    bool match = false;
    if (l.host.empty()) {
      match = pid && *pid == l.pid;
    } else {
      const std::string host = ShortHostName(l.host);
      match = host == ShortHostName(agent.host) ||
              (!agent.addr.empty() && host == ShortHostName(agent.addr));
    }
    if (!match) continue;
    // Two launchers that could have started it (two agents on one ssh host): not told apart.
    if (found) return std::nullopt;
    found = static_cast<int>(i);
  }
  if (!found || claimed_[*found]) return std::nullopt;
  claimed_[*found] = true;
  return found;
}

std::string AgentLogs::LauncherLogName(int launch_index) {
  return absl::StrCat("launcher-", launch_index, ".log");
}

std::string AgentLogs::AgentLogName(int node_id) { return absl::StrCat("agent-", node_id, ".log"); }

std::vector<LaunchedAgent> LaunchedAgentsOf(const std::string& node_launcher,
                                            const std::vector<std::string>& agent_hosts,
                                            const std::vector<pid_t>& pids) {
  std::vector<LaunchedAgent> out;
  if (node_launcher != "local" && node_launcher != "ssh") return out;
  for (size_t i = 0; i < pids.size(); ++i) {
    LaunchedAgent l;
    l.pid = pids[i];
    if (node_launcher == "ssh") l.host = i < agent_hosts.size() ? agent_hosts[i] : "?";
    out.push_back(std::move(l));
  }
  return out;
}

std::optional<pid_t> AgentPidOf(const std::string& agent_id) {
  std::vector<std::string> parts = absl::StrSplit(agent_id, ':');
  int pid = 0;
  if (parts.size() < 3 || !absl::SimpleAtoi(parts[parts.size() - 2], &pid) || pid <= 0) {
    return std::nullopt;
  }
  return pid;
}

}  // namespace dlaunch
