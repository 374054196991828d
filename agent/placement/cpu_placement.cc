#include "agent/placement/cpu_placement.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace dlaunch {
namespace {

// A core with at least one allowed hardware thread, reduced to those threads.
struct UsableCore {
  int numa = 0;
  std::vector<int> pus;
};

std::vector<UsableCore> UsableCores(const NodeTopology& topo, const std::vector<int>& allowed) {
  std::set<int> ok(allowed.begin(), allowed.end());
  std::vector<UsableCore> out;
  for (const TopologyCore& c : topo.cores) {
    UsableCore u{c.numa, {}};
    for (int pu : c.pus) {
      if (ok.count(pu)) u.pus.push_back(pu);
    }
    if (!u.pus.empty()) out.push_back(std::move(u));
  }
  return out;
}

// Gives ranks (in order) contiguous near-equal shares of cores (indices into usable); with
// fewer cores than ranks, one core each, round-robin.
void SplitCores(const std::vector<int>& cores, const std::vector<int>& ranks,
                std::vector<std::vector<int>>& cores_of_rank, std::vector<bool>& shared) {
  const int n = static_cast<int>(ranks.size()), m = static_cast<int>(cores.size());
  if (n == 0 || m == 0) return;
  for (int i = 0; i < n; ++i) {
    if (m >= n) {
      int begin = i * (m / n) + std::min(i, m % n);
      int len = m / n + (i < m % n ? 1 : 0);
      cores_of_rank[ranks[i]].assign(cores.begin() + begin, cores.begin() + begin + len);
    } else {
      cores_of_rank[ranks[i]] = {cores[i % m]};
      shared[ranks[i]] = true;
    }
  }
}

// Ranks without a GPU home: spread over the NUMA domains (a group of whole domains per rank when
// there are more domains than ranks; else ranks per domain in proportion to its cores, at least
// one), then over each domain's cores.
void Spread(const std::vector<std::vector<int>>& by_domain, int nproc,
            std::vector<std::vector<int>>& cores_of_rank, std::vector<bool>& shared) {
  std::vector<int> domains;
  for (size_t d = 0; d < by_domain.size(); ++d) {
    if (!by_domain[d].empty()) domains.push_back(static_cast<int>(d));
  }
  const int nd = static_cast<int>(domains.size());
  if (nd == 0) return;
  if (nproc <= nd) {
    for (int r = 0; r < nproc; ++r) {
      for (int i = r * nd / nproc; i < (r + 1) * nd / nproc; ++i) {
        const auto& c = by_domain[domains[i]];
        cores_of_rank[r].insert(cores_of_rank[r].end(), c.begin(), c.end());
      }
    }
    return;
  }
  size_t total = 0;
  for (int d : domains) total += by_domain[d].size();
  // One rank per domain, the rest by largest remainder of the cores' share (ties: lower domain).
  std::vector<int> count(nd, 1);
  const int rest = nproc - nd;
  std::vector<std::pair<double, int>> remainder;
  int given = 0;
  for (int i = 0; i < nd; ++i) {
    double exact = static_cast<double>(rest) * by_domain[domains[i]].size() / total;
    int whole = static_cast<int>(exact);
    count[i] += whole;
    given += whole;
    remainder.push_back({-(exact - whole), i});
  }
  std::sort(remainder.begin(), remainder.end());
  for (int k = 0; k < rest - given; ++k) ++count[remainder[k].second];
  int next = 0;
  for (int i = 0; i < nd; ++i) {
    std::vector<int> ranks;
    for (int k = 0; k < count[i]; ++k) ranks.push_back(next++);
    SplitCores(by_domain[domains[i]], ranks, cores_of_rank, shared);
  }
}

// GPU positions per rank; a checked explicit map's GPU entries override (use_map).
std::vector<std::vector<int>> AssignGpus(const PlacementRequest& req, bool use_map) {
  const int ngpu = static_cast<int>(req.gpu_numa.size());
  std::vector<int> order(ngpu);
  for (int i = 0; i < ngpu; ++i) order[i] = i;
  if (req.gpus_by_locality) {
    auto key = [&](int g) { return req.gpu_numa[g] < 0 ? INT32_MAX : req.gpu_numa[g]; };
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return key(a) < key(b); });
  }
  std::vector<std::vector<int>> gpus(req.nproc);
  for (int r = 0; r < req.nproc; ++r) {
    if (req.gpus_per_proc == 0) {
      if (ngpu > 0) gpus[r].push_back(order[r % ngpu]);
    } else {
      for (int k = 0; k < req.gpus_per_proc; ++k) gpus[r].push_back(order[r * req.gpus_per_proc + k]);
    }
  }
  for (int r = 0; use_map && r < req.nproc; ++r) {
    if (req.explicit_map[r].gpu >= 0) gpus[r] = {req.explicit_map[r].gpu};
  }
  return gpus;
}

absl::Status CheckExplicitMap(const NodeTopology& topo, const std::vector<int>& allowed,
                              const PlacementRequest& req) {
  const auto& map = req.explicit_map;
  if (static_cast<int>(map.size()) < req.nproc) {
    return absl::InvalidArgumentError(absl::StrCat(
        "node ", req.host, ": the explicit CPU map has ", map.size(), " entries for ", req.nproc,
        " local ranks; give one per rank"));
  }
  std::set<int> exists;
  for (const TopologyCore& c : topo.cores) exists.insert(c.pus.begin(), c.pus.end());
  const std::set<int> granted(allowed.begin(), allowed.end());
  const std::string has = absl::StrCat("it has CPUs ", CpuRanges({exists.begin(), exists.end()}),
                                       ", of which this allocation grants ", CpuRanges(allowed));
  std::map<int, int> owner;
  for (int r = 0; r < req.nproc; ++r) {
    if (map[r].cpus.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("node ", req.host, ": the explicit CPU map gives local rank ", r, " no CPUs"));
    }
    if (map[r].gpu >= static_cast<int>(req.gpu_numa.size())) {
      return absl::FailedPreconditionError(absl::StrCat(
          "node ", req.host, ": the explicit map gives local rank ", r, " GPU ", map[r].gpu,
          " but this node sees ", req.gpu_numa.size(), " GPUs"));
    }
    for (int cpu : map[r].cpus) {
      if (!exists.count(cpu)) {
        return absl::FailedPreconditionError(absl::StrCat(
            "node ", req.host, ": the explicit CPU map names CPU ", cpu,
            " (local rank ", r, "), which this node does not have; ", has));
      }
      if (!granted.count(cpu)) {
        return absl::FailedPreconditionError(absl::StrCat(
            "node ", req.host, ": the explicit CPU map names CPU ", cpu, " (local rank ", r,
            "), which this allocation does not grant; ", has));
      }
      auto [it, fresh] = owner.emplace(cpu, r);
      if (!fresh && it->second != r) {
        return absl::InvalidArgumentError(absl::StrCat(
            "node ", req.host, ": the explicit CPU map gives CPU ", cpu, " to local ranks ",
            it->second, " and ", r, "; ranks' CPUs must not overlap"));
      }
    }
  }
  return absl::OkStatus();
}

// Fills cpus, cores and numa of p from the cores (indices into usable) it got.
void Describe(const std::vector<UsableCore>& usable, const std::vector<int>& cores,
              RankPlacement& p) {
  std::set<int> domains;
  for (int c : cores) {
    p.cpus.insert(p.cpus.end(), usable[c].pus.begin(), usable[c].pus.end());
    domains.insert(usable[c].numa);
  }
  std::sort(p.cpus.begin(), p.cpus.end());
  p.cores = static_cast<int>(cores.size());
  p.numa = domains.size() == 1 ? *domains.begin() : -1;
}

}  // namespace

absl::StatusOr<std::vector<RankPlacement>> PlaceRanks(const NodeTopology& topo,
                                                      const std::vector<int>& allowed_cpus,
                                                      const PlacementRequest& req) {
  if (req.nproc < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("nproc_per_node must be at least 1, got ", req.nproc));
  }
  if (req.gpus_per_proc < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gpus_per_proc must be 0 (share round-robin) or positive, got ", req.gpus_per_proc));
  }
  const long long need = static_cast<long long>(req.gpus_per_proc) * req.nproc;
  if (need > static_cast<long long>(req.gpu_numa.size())) {
    return absl::FailedPreconditionError(absl::StrCat(
        "node ", req.host, ": gpus_per_proc=", req.gpus_per_proc, " x nproc_per_node=", req.nproc,
        " needs ", need, " GPUs but this node sees ", req.gpu_numa.size()));
  }
  const bool use_map = req.binding == CpuBinding::kCores && !req.explicit_map.empty();
  if (use_map) {
    if (absl::Status st = CheckExplicitMap(topo, allowed_cpus, req); !st.ok()) return st;
  }

  std::vector<std::vector<int>> gpus = AssignGpus(req, use_map);
  std::vector<RankPlacement> plan(req.nproc);
  for (int r = 0; r < req.nproc; ++r) plan[r].gpu_indices = gpus[r];
  if (req.binding == CpuBinding::kNone) return plan;

  const std::vector<UsableCore> usable = UsableCores(topo, allowed_cpus);
  if (use_map) {
    std::map<int, int> core_of_pu;
    for (size_t c = 0; c < usable.size(); ++c) {
      for (int pu : usable[c].pus) core_of_pu[pu] = static_cast<int>(c);
    }
    for (int r = 0; r < req.nproc; ++r) {
      std::set<int> cores;
      for (int cpu : req.explicit_map[r].cpus) cores.insert(core_of_pu.at(cpu));
      Describe(usable, {cores.begin(), cores.end()}, plan[r]);
      // The map says which threads: keep exactly those, not the cores' other threads.
      plan[r].cpus = req.explicit_map[r].cpus;
      std::sort(plan[r].cpus.begin(), plan[r].cpus.end());
      plan[r].cpus.erase(std::unique(plan[r].cpus.begin(), plan[r].cpus.end()), plan[r].cpus.end());
    }
    return plan;
  }

  const int ndomains = static_cast<int>(std::max<size_t>(1, topo.numa_os_index.size()));
  std::vector<std::vector<int>> by_domain(ndomains);
  for (size_t c = 0; c < usable.size(); ++c) {
    by_domain[std::clamp(usable[c].numa, 0, ndomains - 1)].push_back(static_cast<int>(c));
  }
  // A rank's home is its first GPU's domain, when that is known and has allowed cores.
  std::vector<int> home(req.nproc, -1);
  bool all_homed = true;
  for (int r = 0; r < req.nproc; ++r) {
    int d = gpus[r].empty() ? -1 : req.gpu_numa[gpus[r].front()];
    if (d >= 0 && d < ndomains && !by_domain[d].empty()) home[r] = d;
    all_homed = all_homed && home[r] >= 0;
  }
  std::vector<std::vector<int>> cores_of_rank(req.nproc);
  std::vector<bool> shared(req.nproc, false);
  if (all_homed) {
    for (int d = 0; d < ndomains; ++d) {
      std::vector<int> ranks;
      for (int r = 0; r < req.nproc; ++r) {
        if (home[r] == d) ranks.push_back(r);
      }
      SplitCores(by_domain[d], ranks, cores_of_rank, shared);
    }
  } else {
    Spread(by_domain, req.nproc, cores_of_rank, shared);
  }
  for (int r = 0; r < req.nproc; ++r) {
    Describe(usable, cores_of_rank[r], plan[r]);
    plan[r].shared = shared[r];
  }
  return plan;
}

NodeTopology FlatTopology(const std::vector<int>& cpus) {
  NodeTopology t;
  t.numa_os_index = {0};
  for (int cpu : cpus) t.cores.push_back(TopologyCore{0, {cpu}});
  t.allowed_cpus = cpus;
  return t;
}

std::string CpuRanges(const std::vector<int>& values) {
  std::vector<std::string> parts;
  size_t i = 0;
  while (i < values.size()) {
    size_t j = i;
    while (j + 1 < values.size() && values[j + 1] == values[j] + 1) ++j;
    if (j - i >= 2) {
      parts.push_back(absl::StrCat(values[i], "-", values[j]));
    } else {
      for (size_t k = i; k <= j; ++k) parts.push_back(absl::StrCat(values[k]));
    }
    i = j + 1;
  }
  return absl::StrJoin(parts, ",");
}

}  // namespace dlaunch
