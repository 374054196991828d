#include "launcher/run/allocation.h"

#include <algorithm>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/file_io.h"
#include "launcher/spec/hostlist.h"

namespace dlaunch {
namespace {

std::optional<std::string> NonEmpty(const EnvLookup& env, const std::string& name) {
  std::optional<std::string> value = env(name);
  if (value && absl::StripAsciiWhitespace(*value).empty()) return std::nullopt;
  return value;
}

std::string FirstSet(const EnvLookup& env, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (std::optional<std::string> value = NonEmpty(env, name)) {
      return std::string(absl::StripAsciiWhitespace(*value));
    }
  }
  return "";
}

// A nodefile lists one host name per line. A line of several words (an MPI hostfile's
// "host slots=4", or a torn file) names no host a launcher can reach: its line, 1-based.
std::optional<std::string> NodefileProblem(absl::string_view text) {
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    const absl::string_view host = absl::StripAsciiWhitespace(line);
    for (char c : host) {
      const auto u = static_cast<unsigned char>(c);
      if (absl::ascii_isspace(u) || absl::ascii_iscntrl(u)) {
        return absl::StrCat("line ", line_number, ": \"", absl::CHexEscape(host.substr(0, 80)),
                            "\" is not a host name (a nodefile lists one host per line)");
      }
    }
  }
  return std::nullopt;
}

absl::StatusOr<Allocation> FromNodefile(const char* variable, const std::string& path,
                                        const FileReader& read_file) {
  absl::StatusOr<std::string> text = read_file(path);
  if (!text.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot read ", variable, "=", path, ": ", text.status().message()));
  }
  if (std::optional<std::string> problem = NodefileProblem(*text)) {
    return absl::FailedPreconditionError(absl::StrCat(variable, "=", path, " ", *problem));
  }
  Allocation allocation;
  allocation.hosts = ParseNodefile(*text);
  allocation.source = absl::StrCat(variable, "=", path);
  if (allocation.hosts.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(variable, "=", path, " lists no hosts"));
  }
  return allocation;
}

std::string Plural(size_t count, absl::string_view word) {
  return absl::StrCat(count, " ", word, count == 1 ? "" : "s");
}

bool IsThisMachine(const std::string& host, const std::string& local_host) {
  return host == local_host || host == "localhost" || host == "127.0.0.1";
}

std::string ChooseNodeLauncher(const JobSpec& spec, const HostPlan& plan,
                               const Allocation& allocation, const std::string& local_host) {
  if (spec.node_launcher != "auto") return spec.node_launcher;
  const bool all_here = std::all_of(plan.hosts.begin(), plan.hosts.end(),
                                    [&](const std::string& h) { return IsThisMachine(h, local_host); });
  if (all_here) return "local";
  // Inside an allocation the scheduler's launcher reaches its nodes, even a chosen subset.
  if (!allocation.scheduler.empty()) return allocation.node_launcher;
  return "ssh";
}

// common's ReadFile names the path in its error, which FromNodefile already does; keep only the
// reason so the message reads "cannot read PBS_NODEFILE=/x: No such file or directory".
absl::StatusOr<std::string> ReadNodefile(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (text.ok()) return text;
  absl::string_view message = text.status().message();
  absl::ConsumePrefix(&message, absl::StrCat("cannot read ", path, ": "));
  return absl::Status(text.status().code(), message);
}

}  // namespace

std::vector<std::string> ParseNodefile(std::string_view text_view) {
  const absl::string_view text(text_view.data(), text_view.size());
  std::vector<std::string> hosts;
  std::set<std::string> seen;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    std::string host(absl::StripAsciiWhitespace(line));
    if (host.empty() || !seen.insert(host).second) continue;
    hosts.push_back(std::move(host));
  }
  return hosts;
}

absl::StatusOr<Allocation> DetectAllocation(const EnvLookup& env, const FileReader& read_file) {
  if (std::optional<std::string> path = NonEmpty(env, "PBS_NODEFILE")) {
    absl::StatusOr<Allocation> allocation = FromNodefile("PBS_NODEFILE", *path, read_file);
    if (!allocation.ok()) return allocation.status();
    allocation->scheduler = "pbs";
    allocation->job_id = FirstSet(env, {"PBS_JOBID"});
    allocation->node_launcher = "mpiexec";
    return allocation;
  }
  if (std::optional<std::string> path = NonEmpty(env, "COBALT_NODEFILE")) {
    absl::StatusOr<Allocation> allocation = FromNodefile("COBALT_NODEFILE", *path, read_file);
    if (!allocation.ok()) return allocation.status();
    allocation->scheduler = "cobalt";
    allocation->job_id = FirstSet(env, {"COBALT_JOBID"});
    allocation->node_launcher = "mpirun";
    return allocation;
  }
  for (const char* variable : {"SLURM_JOB_NODELIST", "SLURM_NODELIST"}) {
    std::optional<std::string> nodelist = NonEmpty(env, variable);
    if (!nodelist) continue;
    absl::StatusOr<std::vector<std::string>> hosts = ExpandHostlist(*nodelist);
    if (!hosts.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat(variable, ": ", hosts.status().message()));
    }
    Allocation allocation;
    allocation.scheduler = "slurm";
    // A nodelist names each node once already; drop repeats the same way as nodefiles.
    std::set<std::string> seen;
    for (std::string& host : *hosts) {
      if (seen.insert(host).second) allocation.hosts.push_back(std::move(host));
    }
    allocation.job_id = FirstSet(env, {"SLURM_JOB_ID", "SLURM_JOBID"});
    allocation.node_launcher = "srun";
    allocation.source = absl::StrCat(variable, "=", *nodelist);
    return allocation;
  }
  return Allocation{};
}

absl::StatusOr<Allocation> DetectAllocation() {
  return DetectAllocation(ProcessEnvironment(), ReadNodefile);
}

absl::StatusOr<HostPlan> ResolveHosts(const JobSpec& spec,
                                      const std::vector<std::string>& flag_hosts,
                                      const Allocation& allocation,
                                      const std::string& local_host) {
  HostPlan plan;
  absl::StatusCode shortage_code = absl::StatusCode::kInvalidArgument;
  plan.scheduler = allocation.scheduler;
  if (!flag_hosts.empty()) {
    plan.hosts = flag_hosts;
    plan.source = "--hosts";
  } else if (!spec.hosts.empty()) {
    plan.hosts = spec.hosts;
    plan.source = "job.yaml hosts";
  } else if (!allocation.hosts.empty()) {
    plan.hosts = allocation.hosts;
    plan.source = allocation.source.empty() ? allocation.scheduler : allocation.source;
    shortage_code = absl::StatusCode::kFailedPrecondition;
  } else {
    // One machine: every agent runs here, as many as the job asks for.
    const int count = spec.nodes_auto ? 1 : spec.max_nodes;
    plan.hosts.assign(static_cast<size_t>(std::max(count, 1)), local_host);
    plan.spare_hosts.assign(static_cast<size_t>(spec.spare_nodes), local_host);
    plan.source = "local";
    plan.min_nodes = spec.nodes_auto ? 1 : spec.min_nodes;
    plan.max_nodes = static_cast<int>(plan.hosts.size());
    plan.node_launcher = ChooseNodeLauncher(spec, plan, allocation, local_host);
    return plan;
  }
  const int available = static_cast<int>(plan.hosts.size());
  if (spec.nodes_auto) {
    plan.min_nodes = plan.max_nodes = available;
    plan.node_launcher = ChooseNodeLauncher(spec, plan, allocation, local_host);
    return plan;
  }
  if (available < spec.min_nodes) {
    return absl::Status(shortage_code,
                        absl::StrCat("the job needs at least ", Plural(spec.min_nodes, "node"),
                                     " but ", plan.source, " gives ", Plural(available, "host")));
  }
  if (available > spec.max_nodes) {
    if (spec.max_restarts > 0) {
      plan.spare_hosts.assign(plan.hosts.begin() + spec.max_nodes, plan.hosts.end());
    }
    plan.hosts.resize(static_cast<size_t>(spec.max_nodes));
  }
  plan.min_nodes = spec.min_nodes;
  plan.max_nodes = static_cast<int>(plan.hosts.size());
  plan.node_launcher = ChooseNodeLauncher(spec, plan, allocation, local_host);
  return plan;
}

std::vector<std::string> HostPlan::AgentHosts() const {
  std::vector<std::string> all = hosts;
  all.insert(all.end(), spare_hosts.begin(), spare_hosts.end());
  return all;
}

}  // namespace dlaunch
