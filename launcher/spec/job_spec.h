// JobSpec: the parsed, validated form of job.yaml (schema in docs/job-spec.md).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace dlaunch {

struct SchedulerSpec {
  std::string type;                      // "pbs", "cobalt", "slurm", "local" or "" (none)
  std::string site;                      // site profile name, e.g. "polaris"
  std::string account;
  std::string queue;
  std::string walltime;                  // "HH:MM:SS" (normalized), "" = none
  int walltime_s = 0;                    // parsed
  std::vector<std::string> filesystems;  // e.g. {"home", "eagle"}
  std::vector<std::string> modules;      // module load ...
  std::vector<std::string> setup;        // shell lines run before dlaunch run
  // `python_setup: site` (the default): a Python worker gets the site profile's python_setup
  // lines (on Polaris ALCF's conda PyTorch); `off`: it does not (the job brings its own).
  bool site_python_setup = true;
  std::map<std::string, std::string> extra;  // extra directives, key -> value
};

// One local rank's entry of `cpus.map`.
struct CpuMapEntry {
  std::vector<int> cpus;  // OS CPU ids, as written (taskset -c numbering)
  int gpu = -1;           // position in the node's visible GPU list; -1 = planned
};
inline bool operator==(const CpuMapEntry& a, const CpuMapEntry& b) {
  return a.cpus == b.cpus && a.gpu == b.gpu;
}

// `preflight:`, the checks each node passes before round 0 (docs/preflight.md).
struct PreflightSpec {
  bool enabled = true;                   // `preflight: off` turns every check off
  double timeout_s = 30;                 // all checks of one node together
  int64_t min_free_bytes = int64_t{1} << 30;  // free space of each directory the job writes
  std::vector<std::string> paths;        // more directories than the job directory and TMPDIR
  double max_clock_offset_s = 10;        // 0 = the clock is not checked
  bool imports_auto = true;              // `imports: auto`: torch when the Python script imports it
  std::vector<std::string> imports;      // else the modules Python must import
  // `import_check: locate` (default): the interpreter finds the modules without running them,
  // in milliseconds; `import`: it imports them (catches a broken install, but every node then
  // pays the import's seconds before the ranks pay them again).
  bool import_modules = false;
  // The collective check before round 0 (docs/stragglers.md). `auto` (default): on when the
  // job's nodes are on more than one host (agents of one host share its links and cores, so
  // their figures differ only by its load); `on`: always; `off`: never.
  bool collective = true;
  bool collective_auto = true;  // `auto`: `collective` holds unless the nodes share one host
  double collective_budget_s = 20;       // the whole check, waiting for the nodes included
  int64_t collective_bytes = int64_t{4} << 20;  // sent to each neighbour, and all-reduced
  double slow_share = 0.2;               // slower than the peers' median by more: a slow node
  // collective_engine: `auto` (default) measures the links with the job's collective library
  // (Gloo, or NCCL on GPU nodes) when every node's Python has torch and the job uses it; `tcp`
  // always with the agents' own loop.
  bool collective_tcp = false;
};
inline bool operator==(const PreflightSpec& a, const PreflightSpec& b) {
  return a.enabled == b.enabled && a.timeout_s == b.timeout_s &&
         a.min_free_bytes == b.min_free_bytes && a.paths == b.paths &&
         a.max_clock_offset_s == b.max_clock_offset_s && a.imports_auto == b.imports_auto &&
         a.imports == b.imports && a.import_modules == b.import_modules &&
         a.collective == b.collective && a.collective_auto == b.collective_auto &&
         a.collective_budget_s == b.collective_budget_s &&
         a.collective_bytes == b.collective_bytes && a.slow_share == b.slow_share &&
         a.collective_tcp == b.collective_tcp;
}

// stragglers: the straggler score while the job runs (docs/stragglers.md).
struct StragglerSpec {
  std::string policy = "report";   // report, exclude (left out at the next restart), off
  double threshold = 1.25;         // a rank's step time at least this x the median is slow
  double interval_s = 5;           // how often the score is computed
  int intervals = 3;               // slow intervals in a row before it is named (and to clear)
  int warmup_steps = 5;            // each rank's first steps of a round are not scored
};

inline bool operator==(const StragglerSpec& a, const StragglerSpec& b) {
  return a.policy == b.policy && a.threshold == b.threshold && a.interval_s == b.interval_s &&
         a.intervals == b.intervals && a.warmup_steps == b.warmup_steps;
}

struct JobSpec {
  std::string name = "dlaunch-job";
  int min_nodes = 1;
  int max_nodes = 1;
  // `nodes: auto` (job.yaml's default): use every host of --hosts, `hosts:` or the allocation,
  // or one node locally; min_nodes/max_nodes are then set by ResolveHosts (allocation.h).
  bool nodes_auto = false;
  int nproc_per_node = 0;                // 0 = one per visible GPU, else 1
  std::vector<std::string> command;      // argv: the worker program and its arguments
  std::map<std::string, std::string> env;
  std::string workdir;                   // "" = the launcher's working directory
  std::vector<std::string> hosts;        // explicit host list; empty = allocation or local
  std::string node_launcher = "auto";    // auto, local, ssh, mpiexec, mpirun, srun

  int control_port = 0;                  // launcher gRPC port, 0 = pick a free one
  bool control_tls = true;               // rendezvous.tls: the control channel encrypted
  int relay_fanout = 0;                  // rendezvous.relay_fanout: agents per relay, 0 = none
  bool relay_fanout_auto = false;        // relay_fanout: auto (EffectiveRelayFanout decides)
  int master_port = 0;                   // worker MASTER_PORT, 0 = node 0 picks a free one
  bool agent_store = false;              // rendezvous.worker_store: agent (node 0's agent) or rank0
  double join_timeout_s = 300;
  double last_call_s = 10;               // wait after min_nodes joined for more (<= max)
  double heartbeat_interval_s = 2;
  int heartbeat_misses = 3;              // an agent silent this many intervals is lost
  double stop_grace_s = 10;              // SIGTERM -> SIGKILL
  double exit_timeout_s = 30;            // stop.exit_timeout: 0 = off (never a hang at exit)
  bool stall_detection = true;           // health.stall_timeout: off
  double stall_timeout_s = 0;            // health.stall_timeout: 0 = adaptive ("auto")
  double startup_timeout_s = 600;        // health.startup_timeout: 0 = off
  int max_restarts = 0;
  // restart: in_process. A failure's next round keeps the ranks that say they can restart in
  // their own process (docs/restarts.md, "In-process restart"); the others start anew (respawn,
  // the default).
  bool restart_in_process = false;
  int spare_nodes = 0;                   // nodes.spares: extra agents of a local run that wait
  double restart_backoff_s = 0;          // restarts.backoff: wait before the first restart
  double restart_backoff_max_s = 30;     // restarts.backoff_max: the doubling wait's cap
  int crash_loop_limit = 3;              // restarts.crash_loop: same failure N times, 0 = off
  int node_failure_limit = 2;            // restarts.node_failures: exclude a node, 0 = never
  // restarts.warm_start: ranks started anew fork from a warm process that imported the script's
  // libraries (docs/restarts.md).
  std::string warm_start = "off";        // "on", "off" or "auto" (on when the job can restart)

  StragglerSpec stragglers;

  std::string job_root = "runs";         // job directories are job_root/<job-id>
  bool show_all_ranks = true;            // logs.ranks: all
  std::vector<int> show_ranks;           // else the ranks whose output is shown (non-empty)
  int tail_lines = 20;                   // log lines quoted for a failing rank
  double summary_interval_s = 5;         // periodic one-line summary

  bool isolate_gpus = false;             // gpus.binding: isolate
  bool gpu_binding_given = false;        // job.yaml said gpus.binding (a site default may not override it)
  int gpus_per_proc = 0;                 // 0 = visible GPUs / nproc_per_node (at least 1)
  int gpus_per_node = 0;                 // gpus.per_node: GPUs the preflight requires; 0 = any
  PreflightSpec preflight;

  bool cpu_binding_none = false;         // cpus.binding: none (workers are not pinned)
  std::vector<CpuMapEntry> cpu_map;      // cpus.map: one entry per local rank; empty = planned

  SchedulerSpec scheduler;
  // study: the scales `dlaunch scale` runs (empty = the job's own); a batch job of a spec with a
  // study runs the whole study.
  std::vector<int> study_nodes;
  std::vector<int> study_procs;
  std::string source_path;               // file it came from, "" for command-line jobs
};

// Field-by-field equality (used by the resolved-spec round trip); a new field belongs here too.
inline bool operator==(const SchedulerSpec& a, const SchedulerSpec& b) {
  return a.type == b.type && a.site == b.site && a.account == b.account && a.queue == b.queue &&
         a.walltime == b.walltime && a.walltime_s == b.walltime_s &&
         a.filesystems == b.filesystems && a.modules == b.modules && a.setup == b.setup &&
         a.extra == b.extra;
}
inline bool operator!=(const SchedulerSpec& a, const SchedulerSpec& b) { return !(a == b); }

inline bool operator==(const JobSpec& a, const JobSpec& b) {
  return a.name == b.name && a.min_nodes == b.min_nodes && a.max_nodes == b.max_nodes &&
         a.nodes_auto == b.nodes_auto && a.nproc_per_node == b.nproc_per_node &&
         a.command == b.command && a.env == b.env && a.workdir == b.workdir &&
         a.hosts == b.hosts && a.node_launcher == b.node_launcher &&
         a.control_port == b.control_port && a.control_tls == b.control_tls &&
         a.relay_fanout == b.relay_fanout && a.relay_fanout_auto == b.relay_fanout_auto &&
         a.master_port == b.master_port && a.agent_store == b.agent_store &&
         a.join_timeout_s == b.join_timeout_s && a.last_call_s == b.last_call_s &&
         a.heartbeat_interval_s == b.heartbeat_interval_s &&
         a.heartbeat_misses == b.heartbeat_misses && a.stop_grace_s == b.stop_grace_s &&
         a.exit_timeout_s == b.exit_timeout_s && a.stall_detection == b.stall_detection &&
         a.stall_timeout_s == b.stall_timeout_s && a.startup_timeout_s == b.startup_timeout_s &&
         a.max_restarts == b.max_restarts &&
         a.restart_in_process == b.restart_in_process && a.spare_nodes == b.spare_nodes &&
         a.stragglers == b.stragglers &&
         a.restart_backoff_s == b.restart_backoff_s &&
         a.restart_backoff_max_s == b.restart_backoff_max_s &&
         a.crash_loop_limit == b.crash_loop_limit &&
         a.node_failure_limit == b.node_failure_limit && a.warm_start == b.warm_start &&
         a.job_root == b.job_root &&
         a.show_ranks == b.show_ranks && a.show_all_ranks == b.show_all_ranks &&
         a.tail_lines == b.tail_lines && a.summary_interval_s == b.summary_interval_s &&
         a.isolate_gpus == b.isolate_gpus && a.gpus_per_proc == b.gpus_per_proc &&
         a.gpus_per_node == b.gpus_per_node && a.preflight == b.preflight &&
         a.cpu_binding_none == b.cpu_binding_none && a.cpu_map == b.cpu_map &&
         a.scheduler == b.scheduler && a.study_nodes == b.study_nodes &&
         a.study_procs == b.study_procs && a.source_path == b.source_path;
}
inline bool operator!=(const JobSpec& a, const JobSpec& b) { return !(a == b); }

// Nodes a batch job asks the scheduler for: nodes.max plus the spares that wait beside them.
inline int RequestedNodes(const JobSpec& spec) { return spec.max_nodes + spec.spare_nodes; }

}  // namespace dlaunch
