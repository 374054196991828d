#include "launcher/run/agent_logs.h"

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/host_identity.h"

namespace dlaunch {

AgentLogs::AgentLogs(std::vector<LaunchedAgent> launched) : claimed_(launched.size(), false) {
  for (size_t i = 0; i < launched.size(); ++i) {
    const int index = static_cast<int>(i);
    if (launched[i].host.empty()) {
      by_pid_[launched[i].pid] = index;
      continue;
    }
    auto [it, added] = by_host_.emplace(ShortHostName(launched[i].host), index);
    if (!added) it->second = -1;  // two launchers to one host: their agents are not told apart
  }
}

std::optional<int> AgentLogs::Find(const Participant& agent) const {
  if (const std::optional<pid_t> pid = AgentPidOf(agent.agent_id)) {
    if (auto it = by_pid_.find(*pid); it != by_pid_.end()) return it->second;
  }
  for (const std::string* name : {&agent.host, &agent.addr}) {
    if (name->empty()) continue;
    auto it = by_host_.find(ShortHostName(*name));
    if (it != by_host_.end()) return it->second >= 0 ? std::optional<int>(it->second) : std::nullopt;
  }
  return std::nullopt;
}

std::optional<int> AgentLogs::Claim(const Participant& agent) {
  const std::optional<int> found = Find(agent);
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
