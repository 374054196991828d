#include "launcher/spec/job_spec_checks.h"

#include <algorithm>
#include <map>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
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

std::vector<SpecProblem> CheckJobSpec(const JobSpec& spec) {
  std::vector<SpecProblem> problems;
  auto add = [&](std::string path, std::string message) {
    problems.push_back({std::move(path), std::move(message)});
  };
  auto positive = [&](const std::string& path, double seconds) {
    if (!(seconds > 0)) add(path, absl::StrCat(path, " must be positive, got ", FormatDuration(seconds)));
  };
  auto not_negative = [&](const std::string& path, double seconds) {
    if (!(seconds >= 0)) {
      add(path, absl::StrCat(path, " must not be negative, got ", FormatDuration(seconds)));
    }
  };
  auto port = [&](const std::string& path, int value) {
    if (value < 0 || value > 65535) add(path, absl::StrCat(path, " must be in 0..65535, got ", value));
  };
  auto count_at_least = [&](const std::string& path, int value, int least) {
    if (value < least) add(path, absl::StrCat(path, " must be at least ", least, ", got ", value));
  };

  if (!IsJobName(spec.name)) {
    add("name", absl::StrCat("name must be letters, digits, '.', '_' or '-', got \"", spec.name,
                             "\""));
  }
  if (!spec.nodes_auto) {
    if (spec.min_nodes == spec.max_nodes) {
      count_at_least("nodes", spec.min_nodes, 1);
    } else {
      count_at_least("nodes.min", spec.min_nodes, 1);
      if (spec.max_nodes < spec.min_nodes) {
        add("nodes.max", absl::StrCat("nodes.max (", spec.max_nodes,
                                      ") must not be less than nodes.min (", spec.min_nodes, ")"));
      }
    }
  }
  if (spec.nproc_per_node < 0) {
    add("nproc_per_node", absl::StrCat("nproc_per_node must be a positive integer or \"gpu\", got ",
                                       spec.nproc_per_node));
  }
  if (spec.command.empty()) {
    add("command", "command must not be empty");
  } else if (spec.command[0].empty()) {
    add("command[0]", "command[0] (the program) must not be empty");
  }
  for (const auto& [name, value] : spec.env) {
    if (!IsEnvName(name)) {
      add(absl::StrCat("env.", name),
          absl::StrCat("env name '", name, "' is not a valid environment variable name"));
    }
  }
  for (size_t i = 0; i < spec.hosts.size(); ++i) {
    if (!IsHostName(spec.hosts[i])) {
      add(absl::StrCat("hosts[", i, "]"),
          absl::StrCat("hosts[", i, "] \"", spec.hosts[i], "\" is not a valid host name"));
    }
  }
  if (!IsNodeLauncherName(spec.node_launcher)) {
    add("launcher", OneOf("launcher", NodeLauncherNames(), spec.node_launcher));
  }
  port("rendezvous.port", spec.control_port);
  port("rendezvous.master_port", spec.master_port);
  if (spec.control_port != 0 && spec.control_port == spec.master_port) {
    add("rendezvous.master_port",
        absl::StrCat("rendezvous.master_port must differ from rendezvous.port (both ",
                     spec.control_port, ")"));
  }
  positive("rendezvous.join_timeout", spec.join_timeout_s);
  not_negative("rendezvous.last_call", spec.last_call_s);
  positive("heartbeat.interval", spec.heartbeat_interval_s);
  count_at_least("heartbeat.misses", spec.heartbeat_misses, 1);
  not_negative("stop.grace", spec.stop_grace_s);
  not_negative("stop.exit_timeout", spec.exit_timeout_s);
  not_negative("health.stall_timeout", spec.stall_timeout_s);
  not_negative("health.startup_timeout", spec.startup_timeout_s);
  if (spec.max_restarts < 0) {
    add("max_restarts", absl::StrCat("max_restarts must not be negative, got ", spec.max_restarts));
  }
  if (spec.job_root.empty()) add("logs.dir", "logs.dir must not be empty");
  if (!spec.show_all_ranks) {
    if (spec.show_ranks.empty()) {
      add("logs.ranks", "logs.ranks must be \"all\" or a non-empty list of ranks");
    }
    for (size_t i = 0; i < spec.show_ranks.size(); ++i) {
      if (spec.show_ranks[i] < 0) {
        add(absl::StrCat("logs.ranks[", i, "]"),
            absl::StrCat("logs.ranks[", i, "] must be a rank (0 or more), got ",
                         spec.show_ranks[i]));
      }
    }
  }
  if (spec.tail_lines < 0) {
    add("logs.tail_lines",
        absl::StrCat("logs.tail_lines must not be negative, got ", spec.tail_lines));
  }
  not_negative("logs.summary_interval", spec.summary_interval_s);
  if (spec.gpus_per_proc < 0) {
    add("gpus.per_proc",
        absl::StrCat("gpus.per_proc must not be negative, got ", spec.gpus_per_proc));
  }
  CheckCpuMap(spec, &problems);
  if (!spec.scheduler.type.empty() && !IsSchedulerTypeName(spec.scheduler.type)) {
    add("scheduler.type", OneOf("scheduler.type", SchedulerTypeNames(), spec.scheduler.type));
  }
  if (spec.scheduler.walltime_s < 0) {
    add("scheduler.walltime", absl::StrCat("scheduler.walltime must not be negative, got ",
                                           spec.scheduler.walltime_s, "s"));
  }
  return problems;
}

absl::Status ValidateJobSpec(const JobSpec& spec) {
  const std::vector<SpecProblem> problems = CheckJobSpec(spec);
  if (problems.empty()) return absl::OkStatus();
  std::vector<std::string> lines;
  for (const SpecProblem& problem : problems) lines.push_back(problem.message);
  return absl::InvalidArgumentError(absl::StrJoin(lines, "\n"));
}

}  // namespace dlaunch
