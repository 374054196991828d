#include "launcher/study/scale_plan.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace dlaunch {

std::string Scale::Label() const {
  return absl::StrCat("n", nodes, "-p", procs_per_node > 0 ? absl::StrCat(procs_per_node) : "gpu");
}

absl::StatusOr<std::vector<int>> ParseScaleList(absl::string_view flag, absl::string_view text) {
  const absl::string_view trimmed = absl::StripAsciiWhitespace(text);
  if (trimmed.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": empty list; give counts like 1,2,4"));
  }
  std::vector<int> out;
  for (absl::string_view part : absl::StrSplit(trimmed, ',')) {
    part = absl::StripAsciiWhitespace(part);
    int n = 0;
    if (!absl::SimpleAtoi(part, &n) || n < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          flag, ": '", part, "' in '", trimmed, "' is not a positive integer; give counts like 1,2,4"));
    }
    if (std::find(out.begin(), out.end(), n) != out.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, ": ", n, " appears twice in '", trimmed, "'"));
    }
    out.push_back(n);
  }
  return out;
}

absl::StatusOr<std::vector<Scale>> PlanScales(const std::vector<int>& nodes,
                                              const std::vector<int>& procs,
                                              const ScaleLimits& limits) {
  const std::vector<int> node_list = nodes.empty() ? std::vector<int>{limits.default_nodes} : nodes;
  const std::vector<int> proc_list = procs.empty() ? std::vector<int>{limits.default_procs} : procs;
  const int most = *std::max_element(node_list.begin(), node_list.end());
  if (limits.allocation_hosts > 0 && most > limits.allocation_hosts) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--nodes asks for ", most, " nodes, but the allocation has ", limits.allocation_hosts,
        limits.allocation_source.empty() ? "" : absl::StrCat(" (", limits.allocation_source, ")")));
  }
  std::vector<Scale> out;
  for (int n : node_list) {
    for (int p : proc_list) out.push_back(Scale{n, p});
  }
  return out;
}

std::vector<std::string> ScaleRunArgs(const std::string& spec_path, const Scale& scale,
                                      const std::string& run_dir) {
  std::vector<std::string> args = {"run", spec_path, "--nnodes", absl::StrCat(scale.nodes)};
  if (scale.procs_per_node > 0) {
    args.insert(args.end(), {"--nproc-per-node", absl::StrCat(scale.procs_per_node)});
  }
  args.insert(args.end(), {"--job-dir", run_dir});
  return args;
}

}  // namespace dlaunch
