// JobSpec: the parsed, validated form of job.yaml (schema in docs/job-spec.md).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace dlaunch {

struct SchedulerSpec {
  std::string type;                      // "pbs", "cobalt", "slurm", "local" or "" (none)
  std::string site;                      // site profile name, e.g. "polaris"
  std::string account;
  std::string queue;
  std::string walltime;                  // as written, e.g. "01:00:00"
  int walltime_s = 0;                    // parsed
  std::vector<std::string> filesystems;  // e.g. {"home", "eagle"}
  std::vector<std::string> modules;      // module load ...
  std::vector<std::string> setup;        // shell lines run before dlaunch run
  std::map<std::string, std::string> extra;  // extra directives, key -> value
};

struct JobSpec {
  std::string name = "dlaunch-job";
  int min_nodes = 1;
  int max_nodes = 1;
  int nproc_per_node = 0;                // 0 = one per visible GPU, else 1
  std::vector<std::string> command;      // argv: the worker program and its arguments
  std::map<std::string, std::string> env;
  std::string workdir;                   // "" = the launcher's working directory
  std::vector<std::string> hosts;        // explicit host list; empty = allocation or local
  std::string node_launcher = "auto";    // auto, local, ssh, mpiexec, mpirun, srun

  int control_port = 0;                  // launcher gRPC port, 0 = pick a free one
  int master_port = 0;                   // worker MASTER_PORT, 0 = node 0 picks a free one
  double join_timeout_s = 300;
  double last_call_s = 10;               // wait after min_nodes joined for more (<= max)
  double heartbeat_interval_s = 2;
  int heartbeat_misses = 3;              // an agent silent this many intervals is lost
  double stop_grace_s = 10;              // SIGTERM -> SIGKILL
  int max_restarts = 0;

  std::string job_root = "runs";         // job directories are job_root/<job-id>
  std::vector<int> show_ranks;           // ranks whose output is shown; empty = all
  bool show_all_ranks = true;
  int tail_lines = 20;                   // log lines quoted for a failing rank
  double summary_interval_s = 5;         // periodic one-line summary

  bool isolate_gpus = false;             // gpus.binding: isolate
  int gpus_per_proc = 0;

  SchedulerSpec scheduler;
  std::string source_path;               // file it came from, "" for command-line jobs
};

}  // namespace dlaunch
