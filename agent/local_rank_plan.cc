#include "agent/local_rank_plan.h"

#include <sched.h>

#include <algorithm>
#include <cerrno>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace dlaunch {
namespace {

// "0-3,8,10-11": compact form for log lines only.
std::string Ranges(const std::vector<int>& values) {
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

}  // namespace

absl::StatusOr<std::vector<RankSlot>> PlanLocalRanks(int nproc, const GpuInventory& gpus,
                                                     const std::vector<int>& allowed_cpus,
                                                     int gpus_per_proc) {
  if (nproc < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("nproc_per_node must be at least 1, got ", nproc));
  }
  if (gpus_per_proc < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("gpus_per_proc must be 0 (share round-robin) or positive, got ",
                     gpus_per_proc));
  }
  const int ngpu = gpus.count();
  if (gpus_per_proc > 0 && static_cast<long long>(gpus_per_proc) * nproc > ngpu) {
    return absl::FailedPreconditionError(absl::StrCat(
        "gpus_per_proc=", gpus_per_proc, " x nproc_per_node=", nproc, " needs ",
        static_cast<long long>(gpus_per_proc) * nproc, " GPUs but this node sees ", ngpu,
        " (from ", gpus.source.empty() ? "none" : gpus.source,
        ngpu > 0 ? absl::StrCat(": ", absl::StrJoin(gpus.visible, ",")) : "", ")"));
  }

  std::vector<RankSlot> plan(nproc);
  const int ncpu = static_cast<int>(allowed_cpus.size());
  for (int r = 0; r < nproc; ++r) {
    RankSlot& s = plan[r];
    s.local_rank = r;
    if (gpus_per_proc == 0) {
      if (ngpu > 0) s.gpu_indices.push_back(r % ngpu);
    } else {
      for (int k = 0; k < gpus_per_proc; ++k) s.gpu_indices.push_back(r * gpus_per_proc + k);
    }
    for (int idx : s.gpu_indices) s.gpus.push_back(gpus.visible[idx]);

    if (ncpu >= nproc) {
      // Contiguous shares keep a rank's cores together (same socket/L3 when ids are
      // numbered that way); the first ncpu % nproc ranks take one extra core.
      int base = ncpu / nproc, extra = ncpu % nproc;
      int begin = r * base + std::min(r, extra);
      int len = base + (r < extra ? 1 : 0);
      s.cpus.assign(allowed_cpus.begin() + begin, allowed_cpus.begin() + begin + len);
    } else if (ncpu > 0) {
      s.cpus.push_back(allowed_cpus[r % ncpu]);
    }
  }
  return plan;
}

int DefaultProcsPerNode(const GpuInventory& gpus) {
  return gpus.count() > 0 ? gpus.count() : 1;
}

std::vector<int> AllowedCpus() {
  // CPU_ALLOC sizes beyond CPU_SETSIZE (1024) matter on large nodes; grow until it fits.
  for (int ncpus = CPU_SETSIZE; ncpus <= (1 << 16); ncpus *= 2) {
    cpu_set_t* set = CPU_ALLOC(ncpus);
    if (set == nullptr) return {};
    size_t size = CPU_ALLOC_SIZE(ncpus);
    CPU_ZERO_S(size, set);
    if (sched_getaffinity(0, size, set) == 0) {
      std::vector<int> cpus;
      for (int c = 0; c < ncpus; ++c) {
        if (CPU_ISSET_S(c, size, set)) cpus.push_back(c);
      }
      CPU_FREE(set);
      return cpus;
    }
    CPU_FREE(set);
    if (errno != EINVAL) return {};
  }
  return {};
}

std::string JoinInts(const std::vector<int>& values) { return absl::StrJoin(values, ","); }

std::string DescribeRankSlot(const RankSlot& slot) {
  std::string gpus = slot.gpus.empty()
                         ? std::string("none")
                         : absl::StrCat(absl::StrJoin(slot.gpus, ","), " (index ",
                                        absl::StrJoin(slot.gpu_indices, ","), ")");
  std::string cpus = slot.cpus.empty() ? std::string("any") : Ranges(slot.cpus);
  return absl::StrCat("local_rank ", slot.local_rank, ": gpus ", gpus, ", cpus ", cpus);
}

}  // namespace dlaunch
