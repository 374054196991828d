#include "launcher/job/collective_verdict.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace dlaunch {
namespace {

v1::CheckResult Check(const std::string& name, bool failed, std::string detail) {
  v1::CheckResult r;
  r.set_name(name);
  r.set_verdict(failed ? v1::CheckResult::FAILED : v1::CheckResult::PASSED);
  r.set_detail(std::move(detail));
  return r;
}

std::string Flops(double flops) { return absl::StrFormat("%.2f GFLOP/s per core", flops / 1e9); }

// "0.05 GB/s, 96% below the median of its peers (1.20 GB/s)", or "1.24 GB/s (peers' median
// 1.20 GB/s)" when it is not slow.
std::string Figure(double value, double median, bool slow, std::string (*format)(double)) {
  if (!slow) return absl::StrCat(format(value), " (peers' median ", format(median), ")");
  const double below = median > 0 ? 100.0 * (1.0 - value / median) : 0;
  return absl::StrFormat("%s, %.0f%% below the median of its peers (%s)", format(value), below,
                         format(median));
}

// The median of every figure but figures[i], for each i: one sort, then each node's median read
// off the sorted figures with its own taken out (O(N log N), for 10,000 nodes).
std::vector<double> MediansOfOthers(const std::vector<double>& figures) {
  const size_t n = figures.size();
  std::vector<double> out(n, 0);
  if (n < 2) return out;
  std::vector<double> sorted = figures;
  std::sort(sorted.begin(), sorted.end());
  const size_t m = n - 1;
  for (size_t i = 0; i < n; ++i) {
    // Any copy of an equal value leaves the same others behind.
    const size_t r = std::lower_bound(sorted.begin(), sorted.end(), figures[i]) - sorted.begin();
    auto at = [&](size_t k) { return sorted[k < r ? k : k + 1]; };
    out[i] = m % 2 == 1 ? at(m / 2) : (at(m / 2 - 1) + at(m / 2)) / 2;
  }
  return out;
}

}  // namespace

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + mid, values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  const double lower = *std::max_element(values.begin(), values.begin() + mid);
  return (lower + upper) / 2;
}

std::vector<double> LinkFigures(const std::vector<CollectiveNode>& nodes) {
  const size_t n = nodes.size();
  std::vector<double> out(n, 0);
  auto right = [&](size_t i) { return nodes[i].reported ? nodes[i].figures.to_right_bps() : 0.0; };
  auto left = [&](size_t i) { return nodes[i].reported ? nodes[i].figures.to_left_bps() : 0.0; };
  if (n == 2) {
    for (size_t i = 0; i < n; ++i) out[i] = std::min(right(i), left(i));
    return out;
  }
  // link[i]: between node i and node i+1, at its slower direction.
  std::vector<double> link(n);
  for (size_t i = 0; i < n; ++i) link[i] = std::min(right(i), left((i + 1) % n));
  for (size_t i = 0; i < n; ++i) out[i] = std::max(link[(i + n - 1) % n], link[i]);
  return out;
}

std::vector<bool> SlowAgainstPeers(const std::vector<double>& figures, double share) {
  std::vector<bool> slow(figures.size(), false);
  if (figures.size() < 2) return slow;
  const std::vector<double> medians = MediansOfOthers(figures);
  for (size_t i = 0; i < figures.size(); ++i) {
    slow[i] = medians[i] > 0 && figures[i] < (1.0 - share) * medians[i];
  }
  return slow;
}

std::string CommonEngine(const std::vector<std::string>& engines) {
  if (engines.empty()) return "tcp";
  const std::set<std::string> seen(engines.begin(), engines.end());
  if (seen == std::set<std::string>{"nccl"}) return "nccl";
  if (!seen.count("")) return "gloo";
  return "tcp";
}

std::string FormatRate(double bps) {
  if (bps >= 1e9) return absl::StrFormat("%.2f GB/s", bps / 1e9);
  if (bps >= 1e6) return absl::StrFormat("%.1f MB/s", bps / 1e6);
  return absl::StrFormat("%.0f kB/s", bps / 1e3);
}

CollectiveVerdict JudgeCollective(const std::vector<CollectiveNode>& nodes, double share,
                                  int nodes_min, bool one_host) {
  CollectiveVerdict v;
  const size_t n = nodes.size();
  const std::vector<double> links = LinkFigures(nodes);
  std::vector<double> flops(n, 0);
  std::vector<double> allreduce;
  for (size_t i = 0; i < n; ++i) {
    if (!nodes[i].reported) continue;
    flops[i] = nodes[i].figures.flops_per_core();
    if (nodes[i].figures.allreduce_bps() > 0) allreduce.push_back(nodes[i].figures.allreduce_bps());
  }
  const std::vector<bool> slow_net = SlowAgainstPeers(links, share);
  const std::vector<bool> slow_flops = SlowAgainstPeers(flops, share);
  // The GPUs' own all-reduce (nccl-tests) is judged when every node measured it: a node without
  // all_reduce_perf is not slow for it.
  std::vector<double> gpu(n, 0);
  bool gpu_judged = n >= 2;
  for (size_t i = 0; i < n; ++i) {
    gpu[i] = nodes[i].reported ? nodes[i].figures.gpu_busbw_bps() : 0;
    gpu_judged = gpu_judged && gpu[i] > 0;
  }
  const std::vector<bool> slow_gpu =
      gpu_judged ? SlowAgainstPeers(gpu, share) : std::vector<bool>(n, false);
  const std::vector<double> gpu_medians = MediansOfOthers(gpu);
  std::vector<bool> slow_link(n);  // the `link` check: the ring's links, or the GPUs' own
  for (size_t i = 0; i < n; ++i) slow_link[i] = slow_net[i] || slow_gpu[i];
  std::string method;
  for (const CollectiveNode& node : nodes) {
    if (node.reported && method.empty()) method = node.figures.method();
  }
  for (size_t i = 0; i < n; ++i) {
    if (slow_link[i] || slow_flops[i]) v.slow.push_back(static_cast<int>(i));
  }
  v.left_out = !one_host && !v.slow.empty() && static_cast<int>(n - v.slow.size()) >= nodes_min;
  const std::string fate =
      v.left_out ? "left out"
      : one_host ? "kept: the nodes share one host, whose load is what their figures differ by"
                 : absl::StrCat("kept: nodes.min (", nodes_min, ") needs it");
  v.lines.push_back(absl::StrFormat(
      "collective check: %d node(s): link median %s, all-reduce median %s, compute median %s%s "
      "(preflight.slow_share %.0f%%; measured with %s)",
      n, FormatRate(Median(links)), FormatRate(Median(allreduce)), Flops(Median(flops)),
      gpu_judged ? ", GPUs' all-reduce median " + FormatRate(Median(gpu)) : "", share * 100,
      method.empty() ? "nothing: no node reported" : method));
  const std::vector<double> link_medians = MediansOfOthers(links);
  const std::vector<double> flops_medians = MediansOfOthers(flops);
  for (size_t i = 0; i < n; ++i) {
    const std::string missing = nodes[i].reported ? nodes[i].figures.error()
                                                  : "no figures within preflight.collective_budget";
    std::string link = Figure(links[i], link_medians[i], slow_net[i], FormatRate);
    std::string compute = Figure(flops[i], flops_medians[i], slow_flops[i], Flops);
    if (gpu_judged) {
      absl::StrAppend(&link, "; GPUs' all-reduce (all_reduce_perf bus bandwidth): ",
                      Figure(gpu[i], gpu_medians[i], slow_gpu[i], FormatRate));
    }
    if (!missing.empty()) absl::StrAppend(slow_link[i] ? &link : &compute, " (", missing, ")");
    const bool out = v.left_out;
    v.checks.push_back({Check("link", slow_link[i] && out, "to its ring neighbours: " + link),
                        Check("compute", slow_flops[i] && out, compute)});
    if (!slow_link[i] && !slow_flops[i]) continue;
    std::vector<std::string> what;
    if (slow_link[i]) what.push_back("link " + link);
    if (slow_flops[i]) what.push_back("compute " + compute);
    if (!out) {
      for (v1::CheckResult& c : v.checks.back()) c.set_detail("slow, " + fate + ": " + c.detail());
    }
    v.lines.push_back(absl::StrCat("slow node: ", nodes[i].host, ": ", absl::StrJoin(what, "; "),
                                   "; ", fate));
  }
  return v;
}

}  // namespace dlaunch
