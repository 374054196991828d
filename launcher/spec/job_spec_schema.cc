#include "launcher/spec/job_spec_schema.h"

namespace dlaunch {

const std::map<std::string, std::vector<std::string>>& SchemaKeys() {
  static const auto* keys = new std::map<std::string, std::vector<std::string>>{
      {"",
       {"name", "nodes", "nproc_per_node", "command", "args", "env", "workdir", "hosts",
        "launcher", "rendezvous", "heartbeat", "stop", "health", "max_restarts", "restart",
        "restarts", "logs", "gpus", "cpus", "preflight", "scheduler", "study", "stragglers"}},
      {"nodes", {"min", "max", "spares"}},
      {"restarts", {"backoff", "backoff_max", "crash_loop", "node_failures", "warm_start"}},
      {"study", {"nodes", "procs"}},
      {"rendezvous", {"port", "tls", "relay_fanout", "master_port", "worker_store", "join_timeout", "last_call"}},
      {"heartbeat", {"interval", "misses"}},
      {"stop", {"grace", "exit_timeout"}},
      {"health", {"stall_timeout", "startup_timeout"}},
      {"stragglers", {"policy", "threshold", "interval", "intervals", "warmup_steps"}},
      {"logs", {"dir", "ranks", "tail_lines", "summary_interval"}},
      {"gpus", {"binding", "per_proc", "per_node"}},
      {"preflight", {"timeout", "min_free", "paths", "clock_offset", "imports", "import_check",
                    "collective", "collective_engine", "collective_budget", "collective_size", "slow_share"}},
      {"cpus", {"binding", "map"}},
      {"scheduler",
       {"type", "site", "account", "queue", "walltime", "filesystems", "modules", "setup",
        "python_setup", "directives", "extra"}},
  };
  return *keys;
}

const std::map<std::string, std::string>& KnownAliases() {
  static const auto* aliases = new std::map<std::string, std::string>{
      {"nnodes", "nodes"},         {"nproc", "nproc_per_node"},  {"ppn", "nproc_per_node"},
      {"cmd", "command"},          {"program", "command"},       {"entrypoint", "command"},
      {"environment", "env"},      {"cwd", "workdir"},           {"time", "scheduler.walltime"},
      {"project", "scheduler.account"},
  };
  return *aliases;
}

}  // namespace dlaunch
