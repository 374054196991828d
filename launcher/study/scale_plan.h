// The scales a study runs: the --nodes / --procs lists parsed, crossed, and checked against the
// allocation, and the `dlaunch run` arguments of each scale. Pure.
#pragma once

#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/statusor.h"

namespace dlaunch {

// One scale of a study. procs_per_node 0 keeps the job's own (one per GPU).
struct Scale {
  int nodes = 1;
  int procs_per_node = 1;

  // Workers when known before the run (0 when procs follow the GPUs).
  int workers() const { return nodes * procs_per_node; }
  // "n2-p4": the name of the scale's run directory.
  std::string Label() const;
};

// "1,2,4" -> {1, 2, 4}. Positive integers, comma-separated, each once. InvalidArgument naming
// `flag` and the offending entry for an empty list, an empty entry or anything else.
absl::StatusOr<std::vector<int>> ParseScaleList(absl::string_view flag, absl::string_view text);

// What the study needs to know about where it runs.
struct ScaleLimits {
  int default_nodes = 1;           // the job's node count when --nodes is not given
  int default_procs = 1;           // the job's nproc_per_node when --procs is not given (0 = GPUs)
  int allocation_hosts = 0;        // hosts of the batch allocation; 0 = not in one (local)
  std::string allocation_source;   // where those hosts came from, for the error message
};

// Every (nodes, procs) pair, nodes outer, in the order given. An empty list means the job's own
// value. InvalidArgument when a scale asks for more nodes than the allocation has (both numbers
// named).
absl::StatusOr<std::vector<Scale>> PlanScales(const std::vector<int>& nodes,
                                              const std::vector<int>& procs,
                                              const ScaleLimits& limits);

// Arguments after `dlaunch` that run `spec_path` at `scale` into `run_dir`.
std::vector<std::string> ScaleRunArgs(const std::string& spec_path, const Scale& scale,
                                      const std::string& run_dir);

}  // namespace dlaunch
