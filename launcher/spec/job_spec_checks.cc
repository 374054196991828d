#include "launcher/spec/job_spec_checks.h"

#include <algorithm>
#include <map>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/did_you_mean.h"
#include "launcher/spec/names.h"
#include "launcher/spec/spec_scalars.h"

namespace dlaunch {
namespace {

bool IsJobName(const std::string& name) {
  if (name.empty()) return false;
  return std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return absl::ascii_isalnum(c) || c == '.' || c == '_' || c == '-';
  });
}

bool IsEnvName(const std::string& name) {
  if (name.empty() || absl::ascii_isdigit(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(),
                     [](unsigned char c) { return absl::ascii_isalnum(c) || c == '_'; });
}

bool IsHostName(const std::string& host) {
  if (host.empty()) return false;
  return std::none_of(host.begin(), host.end(), [](unsigned char c) {
    return absl::ascii_isspace(c) || c == ',' || c == '[' || c == ']' || c == '/';
  });
}

std::string OneOf(const std::string& path, const std::vector<std::string>& names,
                  const std::string& got) {
  std::string message =
      absl::StrCat(path, " must be one of ", absl::StrJoin(names, ", "), ", got \"", got, "\"");
  if (std::string near = ClosestMatch(got, names); !near.empty()) {
    absl::StrAppend(&message, " (did you mean '", near, "'?)");
  }
  return message;
}

// cpus.map as far as it can be judged without the node: no empty entry, no CPU in two entries,
// no negative GPU, an entry per rank when nproc_per_node is a number, and no map with binding
// off. CPUs or GPUs the node lacks are the agent's to report.
void CheckCpuMap(const JobSpec& spec, std::vector<SpecProblem>* problems) {
  auto add = [&](std::string path, std::string message) {
    problems->push_back({std::move(path), std::move(message)});
  };
  if (spec.cpu_map.empty()) return;
  if (spec.cpu_binding_none) {
    add("cpus.map", "cpus.map cannot be used with cpus.binding: none (nothing would be pinned)");
    return;
  }
  if (spec.nproc_per_node > 0 && static_cast<int>(spec.cpu_map.size()) < spec.nproc_per_node) {
    add("cpus.map", absl::StrCat("cpus.map has ", spec.cpu_map.size(), " entries for ",
                                 spec.nproc_per_node, " local ranks (nproc_per_node); give one "
                                 "per local rank"));
  }
  std::map<int, size_t> owner;  // CPU -> first entry naming it
  for (size_t i = 0; i < spec.cpu_map.size(); ++i) {
    const std::string path = absl::StrCat("cpus.map[", i, "]");
    const CpuMapEntry& entry = spec.cpu_map[i];
    if (entry.cpus.empty()) add(path, absl::StrCat(path, " names no CPU"));
    if (entry.gpu < -1) add(path, absl::StrCat(path, ".gpu must not be negative, got ", entry.gpu));
    for (int cpu : entry.cpus) {
      auto [it, first] = owner.emplace(cpu, i);
      if (!first && it->second != i) {
        add(path, absl::StrCat(path, " gives CPU ", cpu, " to local rank ", i,
                               ", but cpus.map[", it->second, "] gives it to local rank ",
                               it->second, " already"));
      }
    }
  }
}

}  // namespace

namespace {

// Collects problems; the helpers word each kind of rule the same way everywhere.
class Problems {
 public:
  void Add(std::string path, std::string message) {
    list_.push_back({std::move(path), std::move(message)});
  }
  void Positive(const std::string& path, double seconds) {
    if (!(seconds > 0)) Add(path, absl::StrCat(path, " must be positive, got ", FormatDuration(seconds)));
  }
  void NotNegative(const std::string& path, double seconds) {
    if (!(seconds >= 0)) {
      Add(path, absl::StrCat(path, " must not be negative, got ", FormatDuration(seconds)));
    }
  }
  void NotNegative(const std::string& path, int value) {
    if (value < 0) Add(path, absl::StrCat(path, " must not be negative, got ", value));
  }
  void Port(const std::string& path, int value) {
    if (value < 0 || value > 65535) Add(path, absl::StrCat(path, " must be in 0..65535, got ", value));
  }
  void AtLeast(const std::string& path, int value, int least) {
    if (value < least) Add(path, absl::StrCat(path, " must be at least ", least, ", got ", value));
  }
  std::vector<SpecProblem>* list() { return &list_; }
  std::vector<SpecProblem> Take() { return std::move(list_); }

 private:
  std::vector<SpecProblem> list_;
};

// name, nodes, nproc_per_node, command, env, hosts, launcher.
void CheckJobShape(const JobSpec& spec, Problems& p) {
  if (!IsJobName(spec.name)) {
    p.Add("name", absl::StrCat("name must be letters, digits, '.', '_' or '-', got \"", spec.name,
                               "\""));
  }
  if (!spec.nodes_auto) {
    if (spec.min_nodes == spec.max_nodes) {
      p.AtLeast("nodes", spec.min_nodes, 1);
    } else {
      p.AtLeast("nodes.min", spec.min_nodes, 1);
      if (spec.max_nodes < spec.min_nodes) {
        p.Add("nodes.max", absl::StrCat("nodes.max (", spec.max_nodes,
                                        ") must not be less than nodes.min (", spec.min_nodes, ")"));
      }
    }
  }
  if (spec.nproc_per_node < 0) {
    p.Add("nproc_per_node", absl::StrCat("nproc_per_node must be a positive integer or \"gpu\", got ",
                                         spec.nproc_per_node));
  }
  if (spec.command.empty()) {
    p.Add("command", "command must not be empty");
  } else if (spec.command[0].empty()) {
    p.Add("command[0]", "command[0] (the program) must not be empty");
  }
  for (const auto& [name, value] : spec.env) {
    if (!IsEnvName(name)) {
      p.Add(absl::StrCat("env.", name),
            absl::StrCat("env name '", name, "' is not a valid environment variable name"));
    }
  }
  for (size_t i = 0; i < spec.hosts.size(); ++i) {
    if (!IsHostName(spec.hosts[i])) {
      p.Add(absl::StrCat("hosts[", i, "]"),
            absl::StrCat("hosts[", i, "] \"", spec.hosts[i], "\" is not a valid host name"));
    }
  }
  if (!IsNodeLauncherName(spec.node_launcher)) {
    p.Add("launcher", OneOf("launcher", NodeLauncherNames(), spec.node_launcher));
  }
}

// rendezvous, heartbeat, stop, health, max_restarts, restarts, nodes.spares, preflight.
void CheckTimings(const JobSpec& spec, Problems& p) {
  p.Port("rendezvous.port", spec.control_port);
  p.Port("rendezvous.master_port", spec.master_port);
  if (spec.control_port != 0 && spec.control_port == spec.master_port) {
    p.Add("rendezvous.master_port",
          absl::StrCat("rendezvous.master_port must differ from rendezvous.port (both ",
                       spec.control_port, ")"));
  }
  p.NotNegative("rendezvous.relay_fanout", spec.relay_fanout);
  p.Positive("rendezvous.join_timeout", spec.join_timeout_s);
  p.NotNegative("rendezvous.last_call", spec.last_call_s);
  p.Positive("heartbeat.interval", spec.heartbeat_interval_s);
  p.AtLeast("heartbeat.misses", spec.heartbeat_misses, 1);
  p.NotNegative("stop.grace", spec.stop_grace_s);
  p.NotNegative("stop.exit_timeout", spec.exit_timeout_s);
  p.NotNegative("health.stall_timeout", spec.stall_timeout_s);
  p.NotNegative("health.startup_timeout", spec.startup_timeout_s);
  p.NotNegative("max_restarts", spec.max_restarts);
  if (!(spec.stragglers.threshold > 1)) {
    p.Add("stragglers.threshold",
          absl::StrCat("stragglers.threshold must be more than 1 (a share of the median step "
                       "time, such as 1.25), got ", spec.stragglers.threshold));
  }
  p.Positive("stragglers.interval", spec.stragglers.interval_s);
  p.AtLeast("stragglers.intervals", spec.stragglers.intervals, 1);
  p.NotNegative("stragglers.warmup_steps", spec.stragglers.warmup_steps);
  p.NotNegative("nodes.spares", spec.spare_nodes);
  p.NotNegative("restarts.backoff", spec.restart_backoff_s);
  p.NotNegative("restarts.backoff_max", spec.restart_backoff_max_s);
  p.NotNegative("restarts.crash_loop", spec.crash_loop_limit);
  p.NotNegative("restarts.node_failures", spec.node_failure_limit);
  p.NotNegative("gpus.per_node", spec.gpus_per_node);
  if (spec.preflight.enabled) {
    p.Positive("preflight.timeout", spec.preflight.timeout_s);
    p.NotNegative("preflight.clock_offset", spec.preflight.max_clock_offset_s);
    p.Positive("preflight.collective_budget", spec.preflight.collective_budget_s);
    if (spec.preflight.collective_bytes < 1024) {
      p.Add("preflight.collective_size",
            absl::StrCat("preflight.collective_size must be at least 1KiB, got ",
                         spec.preflight.collective_bytes, " bytes"));
    }
    if (!(spec.preflight.slow_share > 0 && spec.preflight.slow_share < 1)) {
      p.Add("preflight.slow_share",
            absl::StrFormat("preflight.slow_share must be between 0%% and 100%%, got %g%%",
                            spec.preflight.slow_share * 100));
    }
  }
  if (spec.restart_backoff_max_s < spec.restart_backoff_s) {
    p.Add("restarts.backoff_max",
          absl::StrCat("restarts.backoff_max (", FormatDuration(spec.restart_backoff_max_s),
                       ") must not be less than restarts.backoff (",
                       FormatDuration(spec.restart_backoff_s), ")"));
  }
}

void CheckLogs(const JobSpec& spec, Problems& p) {
  if (spec.job_root.empty()) p.Add("logs.dir", "logs.dir must not be empty");
  if (!spec.show_all_ranks) {
    if (spec.show_ranks.empty()) {
      p.Add("logs.ranks", "logs.ranks must be \"all\" or a non-empty list of ranks");
    }
    for (size_t i = 0; i < spec.show_ranks.size(); ++i) {
      if (spec.show_ranks[i] < 0) {
        p.Add(absl::StrCat("logs.ranks[", i, "]"),
              absl::StrCat("logs.ranks[", i, "] must be a rank (0 or more), got ",
                           spec.show_ranks[i]));
      }
    }
  }
  p.NotNegative("logs.tail_lines", spec.tail_lines);
  p.NotNegative("logs.summary_interval", spec.summary_interval_s);
}

void CheckScheduler(const JobSpec& spec, Problems& p) {
  if (!spec.scheduler.type.empty() && !IsSchedulerTypeName(spec.scheduler.type)) {
    p.Add("scheduler.type", OneOf("scheduler.type", SchedulerTypeNames(), spec.scheduler.type));
  }
  if (spec.scheduler.walltime_s < 0) {
    p.Add("scheduler.walltime", absl::StrCat("scheduler.walltime must not be negative, got ",
                                             spec.scheduler.walltime_s, "s"));
  }
}

}  // namespace

std::vector<SpecProblem> CheckJobSpec(const JobSpec& spec) {
  Problems p;
  CheckJobShape(spec, p);
  CheckTimings(spec, p);
  CheckLogs(spec, p);
  p.NotNegative("gpus.per_proc", spec.gpus_per_proc);
  CheckCpuMap(spec, p.list());
  CheckScheduler(spec, p);
  return p.Take();
}

absl::Status ValidateJobSpec(const JobSpec& spec) {
  const std::vector<SpecProblem> problems = CheckJobSpec(spec);
  if (problems.empty()) return absl::OkStatus();
  std::vector<std::string> lines;
  for (const SpecProblem& problem : problems) lines.push_back(problem.message);
  return absl::InvalidArgumentError(absl::StrJoin(lines, "\n"));
}

}  // namespace dlaunch
