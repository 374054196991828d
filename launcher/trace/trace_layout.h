// Who ran where in a job's timeline: the nodes' hosts and, for each rank, the node it ran on at
// each moment (a restart can move it). Read from the journal once, for BuildTraceParts.
#pragma once

#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <string>

#include "launcher/trace/trace_builder.h"

namespace dlaunch {

// Who is who: node ids and hosts, and which node each rank ran on when. After a restart a rank
// can run on another node (a spare took a lost node's place, or the ranks were laid out again),
// so a rank has a track under every node it ran on, and each span goes under the node the rank
// was on at that time.
struct TraceLayout {
  std::map<int, std::string> node_hosts;
  std::map<int, std::map<int64_t, int>> rank_nodes;  // rank -> (Unix microseconds -> node)

  // `node` < 0 or unknown: the rank is known, not where it ran (node 0 unless told later).
  void AddRank(int rank, std::optional<int> node, int64_t unix_us) {
    if (rank < 0) return;
    std::map<int64_t, int>& at = rank_nodes[rank];
    if (node && *node >= 0) {
      at[unix_us] = *node;
      node_hosts.emplace(*node, "");
    }
  }
  void AddHost(int node, const std::string& host) {
    if (node < 0) return;
    std::string& h = node_hosts[node];
    if (h.empty()) h = host;
  }
  // The node `rank` was on at `unix_us`: its last placement at or before then, else its first.
  int NodeAt(int rank, int64_t unix_us) const {
    auto r = rank_nodes.find(rank);
    if (r == rank_nodes.end() || r->second.empty()) return 0;
    auto it = r->second.upper_bound(unix_us);
    return it == r->second.begin() ? it->second : std::prev(it)->second;
  }
  // The node a host names, when exactly one node has it (local runs repeat one host).
  std::optional<int> UniqueNode(const std::string& host) const {
    std::optional<int> found;
    for (const auto& [node, h] : node_hosts) {
      if (h != host) continue;
      if (found) return std::nullopt;
      found = node;
    }
    return found;
  }
};

TraceLayout ReadTraceLayout(const TraceInput& in);

}  // namespace dlaunch
