#include "launcher/spec/resolved_job_yaml.h"

#include <string_view>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "launcher/spec/spec_scalars.h"

namespace dlaunch {
namespace {

// A duration, or `word` (quoted: YAML 1.1 readers take a bare off for false) when it is 0.
std::string DurationOr(double seconds, const std::string& word) {
  return seconds == 0 ? absl::StrCat("\"", word, "\"") : FormatDuration(seconds);
}

// Plain scalars that YAML would read as something other than the same string.
bool NeedsQuotes(absl::string_view text) {
  if (text.empty()) return true;
  const std::string lowered = absl::AsciiStrToLower(text);
  for (const char* word : {"~", "null", "true", "false", "yes", "no", "on", "off", "y", "n"}) {
    if (lowered == word) return true;
  }
  const unsigned char first = text[0];
  if (!(absl::ascii_isalnum(first) || first == '/' || first == '.' || first == '_' ||
        (first == '-' && text.size() > 1 && text[1] != ' '))) {
    return true;
  }
  for (unsigned char c : text) {
    if (!(absl::ascii_isalnum(c) || absl::string_view("/._-+=@%:").find(c) != absl::string_view::npos)) {
      return true;
    }
  }
  // "a:b" is fine plain, but a trailing ':' would start a mapping.
  return text.back() == ':';
}

std::string Quote(absl::string_view text) {
  if (!NeedsQuotes(text)) return std::string(text);
  std::string out = "\"";
  for (unsigned char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          absl::StrAppendFormat(&out, "\\x%02x", c);
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  out += "\"";
  return out;
}

std::string FlowList(const std::vector<std::string>& items) {
  std::vector<std::string> quoted;
  for (const std::string& item : items) quoted.push_back(Quote(item));
  return absl::StrCat("[", absl::StrJoin(quoted, ", "), "]");
}

void AppendMap(std::string* out, absl::string_view indent, absl::string_view key,
               const std::map<std::string, std::string>& values) {
  if (values.empty()) {
    absl::StrAppend(out, indent, key, ": {}\n");
    return;
  }
  absl::StrAppend(out, indent, key, ":\n");
  for (const auto& [name, value] : values) {
    absl::StrAppend(out, indent, "  ", Quote(name), ": ", Quote(value), "\n");
  }
}

// cpus: binding, and the map as a flow list of {cpus: "...", gpu: N}.
void AppendCpus(std::string* out, const JobSpec& spec) {
  absl::StrAppend(out, "cpus:\n");
  absl::StrAppend(out, "  binding: ", spec.cpu_binding_none ? "none" : "cores", "\n");
  std::vector<std::string> entries;
  for (const CpuMapEntry& entry : spec.cpu_map) {
    entries.push_back(absl::StrCat("{cpus: ", Quote(FormatCpuList(entry.cpus)), ", gpu: ",
                                   entry.gpu, "}"));
  }
  absl::StrAppend(out, "  map: [", absl::StrJoin(entries, ", "), "]\n");
}

// `preflight: "off"`, or every setting.
void AppendPreflight(std::string* out, const PreflightSpec& p) {
  if (!p.enabled) {
    absl::StrAppend(out, "preflight: \"off\"\n");
    return;
  }
  absl::StrAppend(out, "preflight:\n");
  absl::StrAppend(out, "  timeout: ", FormatDuration(p.timeout_s), "\n");
  absl::StrAppend(out, "  min_free: ", FormatByteSize(p.min_free_bytes), "\n");
  absl::StrAppend(out, "  paths: ", FlowList(p.paths), "\n");
  absl::StrAppend(out, "  clock_offset: ", DurationOr(p.max_clock_offset_s, "off"), "\n");
  absl::StrAppend(out, "  imports: ", p.imports_auto ? "auto" : FlowList(p.imports), "\n");
  absl::StrAppend(out, "  import_check: ", p.import_modules ? "import" : "locate", "\n");
  absl::StrAppend(out, "  collective: ", Quote(p.collective_auto ? "auto" : p.collective ? "on" : "off"), "\n");
  absl::StrAppend(out, "  collective_engine: ", p.collective_tcp ? "tcp" : "auto", "\n");
  absl::StrAppend(out, "  collective_budget: ", FormatDuration(p.collective_budget_s), "\n");
  absl::StrAppend(out, "  collective_size: ", FormatByteSize(p.collective_bytes), "\n");
  absl::StrAppend(out, "  slow_share: ", absl::StrFormat("\"%g%%\"", p.slow_share * 100), "\n");
}

}  // namespace

std::string ResolvedJobYaml(const JobSpec& spec) {
  std::string out = "# Resolved job: every setting of docs/job-spec.md, defaults filled in.\n";
  absl::StrAppend(&out, "name: ", Quote(spec.name), "\n");
  if (spec.nodes_auto) {
    absl::StrAppend(&out, "nodes: auto\n");
  } else if (spec.min_nodes == spec.max_nodes && spec.spare_nodes == 0) {
    absl::StrAppend(&out, "nodes: ", spec.min_nodes, "\n");
  } else {
    absl::StrAppend(&out, "nodes: {min: ", spec.min_nodes, ", max: ", spec.max_nodes);
    if (spec.spare_nodes > 0) absl::StrAppend(&out, ", spares: ", spec.spare_nodes);
    absl::StrAppend(&out, "}\n");
  }
  absl::StrAppend(&out, "nproc_per_node: ",
                  spec.nproc_per_node == 0 ? "gpu" : absl::StrCat(spec.nproc_per_node), "\n");
  absl::StrAppend(&out, "command: ", FlowList(spec.command), "\n");
  AppendMap(&out, "", "env", spec.env);
  absl::StrAppend(&out, "workdir: ", Quote(spec.workdir), "\n");
  absl::StrAppend(&out, "hosts: ", FlowList(spec.hosts), "\n");
  absl::StrAppend(&out, "launcher: ", Quote(spec.node_launcher), "\n");
  absl::StrAppend(&out, "rendezvous:\n");
  absl::StrAppend(&out, "  port: ", spec.control_port, "\n");
  absl::StrAppend(&out, "  tls: ", Quote(spec.control_tls ? "on" : "off"), "\n");
  if (spec.relay_fanout_auto) {
    absl::StrAppend(&out, "  relay_fanout: auto\n");
  } else {
    absl::StrAppend(&out, "  relay_fanout: ", spec.relay_fanout, "\n");
  }
  absl::StrAppend(&out, "  master_port: ", spec.master_port, "\n");
  absl::StrAppend(&out, "  worker_store: ", Quote(spec.agent_store ? "agent" : "rank0"), "\n");
  absl::StrAppend(&out, "  join_timeout: ", FormatDuration(spec.join_timeout_s), "\n");
  absl::StrAppend(&out, "  last_call: ", FormatDuration(spec.last_call_s), "\n");
  absl::StrAppend(&out, "heartbeat:\n");
  absl::StrAppend(&out, "  interval: ", FormatDuration(spec.heartbeat_interval_s), "\n");
  absl::StrAppend(&out, "  misses: ", spec.heartbeat_misses, "\n");
  absl::StrAppend(&out, "stop:\n");
  absl::StrAppend(&out, "  grace: ", FormatDuration(spec.stop_grace_s), "\n");
  absl::StrAppend(&out, "  exit_timeout: ", DurationOr(spec.exit_timeout_s, "off"), "\n");
  absl::StrAppend(&out, "health:\n");
  absl::StrAppend(&out, "  stall_timeout: ",
                  !spec.stall_detection ? "\"off\"" : DurationOr(spec.stall_timeout_s, "auto"), "\n");
  absl::StrAppend(&out, "  startup_timeout: ", DurationOr(spec.startup_timeout_s, "off"), "\n");
  absl::StrAppend(&out, "stragglers:\n");
  absl::StrAppend(&out, "  policy: ", spec.stragglers.policy, "\n");
  absl::StrAppend(&out, "  threshold: ", spec.stragglers.threshold, "\n");
  absl::StrAppend(&out, "  interval: ", FormatDuration(spec.stragglers.interval_s), "\n");
  absl::StrAppend(&out, "  intervals: ", spec.stragglers.intervals, "\n");
  absl::StrAppend(&out, "  warmup_steps: ", spec.stragglers.warmup_steps, "\n");
  absl::StrAppend(&out, "max_restarts: ", spec.max_restarts, "\n");
  absl::StrAppend(&out, "restart: ", spec.restart_in_process ? "in_process" : "respawn", "\n");
  absl::StrAppend(&out, "restarts:\n");
  absl::StrAppend(&out, "  backoff: ", FormatDuration(spec.restart_backoff_s), "\n");
  absl::StrAppend(&out, "  backoff_max: ", FormatDuration(spec.restart_backoff_max_s), "\n");
  absl::StrAppend(&out, "  crash_loop: ", spec.crash_loop_limit, "\n");
  absl::StrAppend(&out, "  node_failures: ", spec.node_failure_limit, "\n");
  absl::StrAppend(&out, "  warm_start: ", Quote(spec.warm_start), "\n");
  absl::StrAppend(&out, "logs:\n");
  absl::StrAppend(&out, "  dir: ", Quote(spec.job_root), "\n");
  if (spec.show_all_ranks) {
    absl::StrAppend(&out, "  ranks: all\n");
  } else {
    absl::StrAppend(&out, "  ranks: [", absl::StrJoin(spec.show_ranks, ", "), "]\n");
  }
  absl::StrAppend(&out, "  tail_lines: ", spec.tail_lines, "\n");
  absl::StrAppend(&out, "  summary_interval: ", FormatDuration(spec.summary_interval_s), "\n");
  absl::StrAppend(&out, "gpus:\n");
  absl::StrAppend(&out, "  binding: ", spec.isolate_gpus ? "isolate" : "shared", "\n");
  absl::StrAppend(&out, "  per_proc: ", spec.gpus_per_proc, "\n");
  absl::StrAppend(&out, "  per_node: ", spec.gpus_per_node, "\n");
  AppendCpus(&out, spec);
  AppendPreflight(&out, spec.preflight);
  const SchedulerSpec& scheduler = spec.scheduler;
  absl::StrAppend(&out, "scheduler:\n");
  absl::StrAppend(&out, "  type: ", Quote(scheduler.type), "\n");
  absl::StrAppend(&out, "  site: ", Quote(scheduler.site), "\n");
  absl::StrAppend(&out, "  account: ", Quote(scheduler.account), "\n");
  absl::StrAppend(&out, "  queue: ", Quote(scheduler.queue), "\n");
  absl::StrAppend(&out, "  walltime: ",
                  scheduler.walltime_s > 0 ? Quote(FormatWalltime(scheduler.walltime_s))
                                           : std::string("\"\""),
                  "\n");
  absl::StrAppend(&out, "  filesystems: ", FlowList(scheduler.filesystems), "\n");
  absl::StrAppend(&out, "  modules: ", FlowList(scheduler.modules), "\n");
  absl::StrAppend(&out, "  setup: ", FlowList(scheduler.setup), "\n");
  absl::StrAppend(&out, "  python_setup: ", scheduler.site_python_setup ? "site" : "off", "\n");
  AppendMap(&out, "  ", "directives", scheduler.extra);
  // Only a study spec has the section, so every other resolved job reads as before.
  if (!spec.study_nodes.empty() || !spec.study_procs.empty()) {
    absl::StrAppend(&out, "study:\n");
    if (!spec.study_nodes.empty()) {
      absl::StrAppend(&out, "  nodes: [", absl::StrJoin(spec.study_nodes, ", "), "]\n");
    }
    if (!spec.study_procs.empty()) {
      absl::StrAppend(&out, "  procs: [", absl::StrJoin(spec.study_procs, ", "), "]\n");
    }
  }
  return out;
}

}  // namespace dlaunch
