// The verdict of the collective check before round 0 (docs/stragglers.md, "Before round 0"):
// from every node's figures (its links to its two ring neighbours, its compute rate per core),
// which nodes are slow against their peers, and which of those are left out. Pure: the launcher's
// CollectiveCheckHost gathers the figures and answers each node with its checks.
//
// A node's link figure: the link between two ring neighbours runs at the slower of the two
// directions each end measured (its sends, timed until the other acknowledged them); a node's
// figure is the better of its two links, so a node next to a slow one, which has one slow link
// and one good one, is not blamed for it, while the slow node, slow on both sides, is. With two
// nodes there is one link: each node's figure is then what it sent, and a link slow both ways
// belongs to both alike and names neither.
//
// Slow: more than `slow_share` below the median of the node's peers (every other node; with two
// nodes that is the other one, so only the slower of two can be slow, against the better one).
// A figure equal to the median is never slow; a node without figures (it failed the exchange,
// or did not report within the budget) counts as 0.
#pragma once

#include <string>
#include <vector>

#include "dlaunch/control.pb.h"

namespace dlaunch {

struct CollectiveNode {
  std::string host;
  bool reported = false;          // figures arrived within the budget
  v1::CollectiveFigures figures;  // in ring order: right is the next node, left the one before
};

struct CollectiveVerdict {
  // Per node (ring order): its `link` and `compute` checks. FAILED only for a slow node that
  // is left out; a slow node kept (nodes.min needs it) passes, its detail naming it slow.
  std::vector<std::vector<v1::CheckResult>> checks;
  std::vector<int> slow;            // ring positions of the slow nodes
  bool left_out = false;            // the slow nodes are left out (enough others remain)
  std::vector<std::string> lines;   // what the terminal says: the medians, each slow node
};

// The median of `values` (the mean of the two middle ones for an even count); 0 when empty.
double Median(std::vector<double> values);

// Each node's link figure (bytes per second) as the header describes, in ring order.
std::vector<double> LinkFigures(const std::vector<CollectiveNode>& nodes);

// Slow nodes of `figures`: position i is slow when figures[i] < (1 - share) * the median of the
// others'. None when there are fewer than two figures or the others' median is 0.
std::vector<bool> SlowAgainstPeers(const std::vector<double>& figures, double share);

// The verdict for `nodes` (ring order, at least two). The slow ones are left out when at least
// `nodes_min` others remain, else kept and named. `one_host`: the nodes are agents of one
// machine (a local run), whose figures differ by its load, not by their hardware: named, kept.
CollectiveVerdict JudgeCollective(const std::vector<CollectiveNode>& nodes, double share,
                                  int nodes_min, bool one_host = false);

// The engine every node of the check can measure with, from each node's
// CollectiveCheckRequest.engine: "nccl" when all say nccl, "gloo" when all can run torch (a
// node with NCCL can run Gloo too), else "tcp" (the agents' own loop).
std::string CommonEngine(const std::vector<std::string>& engines);

// "1.24 GB/s", "830 MB/s": a rate for the terminal.
std::string FormatRate(double bytes_per_second);

}  // namespace dlaunch
