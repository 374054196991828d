#include "launcher/cli/run_flags.h"

#include <cstdlib>
#include <functional>
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/flags.h"
#include "launcher/cli/run_target.h"
#include "launcher/cli/torchrun_flags.h"
#include "launcher/spec/hostlist.h"
#include "launcher/spec/job_spec_parser.h"
#include "launcher/spec/spec_scalars.h"

namespace dlaunch {

const char kRunUsage[] =
    "usage: dlaunch run [options] job.yaml [options]\n"
    "       dlaunch run [options] train.py [script args...]   (as torchrun: python3 train.py ...)\n"
    "       dlaunch run [options] -- command [args...]\n"
    "  --hosts LIST            hosts to run on (a,b,c or nid[001-004]); default: the allocation's\n"
    "  --nnodes N|MIN:MAX      number of nodes (locally: agents on this machine)\n"
    "  --nproc-per-node N      workers per node (default: one per visible GPU, else 1)\n"
    "  --launcher KIND         local, ssh, mpiexec, mpirun, srun (default: from the allocation)\n"
    "  --launcher-cmd PREFIX   exact command prefix that starts one agent per node\n"
    "  --job-dir DIR           job directory (default: <job root>/<job id>)\n"
    "  --job-root DIR          where job directories go (default: runs)\n"
    "  --name NAME             job name\n"
    "  --port P                launcher control port (default: a free one)\n"
    "  --control-addr ADDR     address agents use to reach the launcher; HOST:PORT when they\n"
    "                          reach it through a forwarded port\n"
    "  --show-ranks all|LIST   ranks whose output is shown (default: all)\n"
    "  --grace TIME            SIGTERM -> SIGKILL grace when stopping workers\n"
    "  --heartbeat TIME        agent heartbeat interval\n"
    "  --exit-timeout TIME     a rank still running this long after another exited 0 is hung (off)\n"
    "  --stall-timeout TIME    a rank without progress this long is stalled (default: auto; off)\n"
    "  --join-timeout TIME     how long to wait for every node to join\n"
    "  --max-restarts N        restart the job in a new round up to N times on a failure\n"
    "  --spares K              start K extra agents that wait and replace lost nodes (local runs)\n"
    "  --no-preflight          skip the nodes' checks before round 0 (docs/preflight.md)\n"
    "  --relay-fanout K|auto   one relay per K agents carries their sessions to the launcher;\n"
    "                          auto: none under 2,000 agents, else one per 1,250\n"
    "                          (rendezvous.relay_fanout; docs/relays.md)\n"
    "  --no-tls                plain TCP for the control channel (rendezvous.tls: off;\n"
    "                          docs/security.md)\n"
    "  TIME: seconds, or as job.yaml writes durations: 20s, 5m, 1h30m, 250ms.\n"
    "torchrun's flags, where they mean something here (also with underscores):\n"
    "  --standalone            every node on this machine, whatever the allocation\n"
    "  --master-port P         workers' MASTER_PORT (rendezvous.master_port)\n"
    "  --master-addr localhost as --standalone; dlaunch picks MASTER_ADDR itself otherwise\n"
    "  --rdzv-endpoint H[:P]   the launcher's address and port (--control-addr, --port)\n"
    "  --rdzv-backend c10d     accepted (static too): the launcher is the rendezvous\n"
    "  --rdzv-id ID            the job's name (--name)\n"
    "  --rdzv-conf K=V,...     join_timeout=TIME, last_call_timeout=TIME\n"
    "  -m MODULE               run python3 -m MODULE; --no-python: run the target as it is\n";

namespace {

// Any string, kept as given (checked later, against the spec).
Flag::Setter Text(std::string* out) {
  return [out](const std::string& v) {
    *out = v;
    return absl::OkStatus();
  };
}

Flag::Setter Count(const std::string& name, int* out) {
  return [name, out](const std::string& v) {
    if (!absl::SimpleAtoi(v, out) || *out < 0) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": not a non-negative integer: '", v, "'"));
    }
    return absl::OkStatus();
  };
}

Flag::Setter Hosts(std::vector<std::string>* out) {
  return [out](const std::string& v) -> absl::Status {
    auto hosts = ExpandHostlist(v);
    if (!hosts.ok()) return absl::InvalidArgumentError(absl::StrCat("--hosts: ", hosts.status().message()));
    *out = *hosts;
    return absl::OkStatus();
  };
}

Flag::Setter ProcsPerNode(int* out) {
  return [out](const std::string& v) {
    if (v == "gpu" || v == "auto") {
      *out = 0;
    } else if (!absl::SimpleAtoi(v, out) || *out < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--nproc-per-node: expected a positive integer or 'gpu', got '", v, "'"));
    }
    return absl::OkStatus();
  };
}

std::vector<Flag> RunFlagTable(RunFlags* f) {
  auto exit_off = [f](const std::string& v) {
    if (v != "off") return false;
    f->exit_timeout_s = 0;
    return true;
  };
  auto stall_word = [f](const std::string& v) {
    if (v != "off" && v != "auto") return false;
    f->stall_off = v == "off";
    f->stall_timeout_s = 0;
    return true;
  };
  std::vector<Flag> table = {
      {{"--hosts"}, true, Hosts(&f->hosts)},
      {{"--nnodes"}, true, Text(&f->nnodes)},
      {{"--nproc-per-node", "--nproc_per_node"}, true, ProcsPerNode(&f->nproc_per_node)},
      {{"--launcher"}, true, Text(&f->launcher)},
      {{"--launcher-cmd"}, true, Text(&f->launcher_cmd)},
      {{"--job-dir"}, true, Text(&f->job_dir)},
      {{"--job-root"}, true, Text(&f->job_root)},
      {{"--name"}, true, Text(&f->name)},
      {{"--control-addr"}, true, Text(&f->control_addr)},
      {{"--port"}, true, PortFlag("--port", &f->port)},
      {{"--show-ranks"}, true, Text(&f->show_ranks)},
      {{"--grace"}, true, DurationFlag("--grace", &f->grace_s)},
      {{"--heartbeat"}, true, DurationFlag("--heartbeat", &f->heartbeat_s)},
      {{"--exit-timeout"}, true, DurationFlag("--exit-timeout", &f->exit_timeout_s, exit_off)},
      {{"--stall-timeout"}, true,
       [f, stall_word](const std::string& v) {
         f->stall_off = false;
         return DurationFlag("--stall-timeout", &f->stall_timeout_s, stall_word)(v);
       }},
      {{"--join-timeout"}, true, DurationFlag("--join-timeout", &f->join_timeout_s)},
      {{"--max-restarts", "--max_restarts"}, true, Count("--max-restarts", &f->max_restarts)},
      {{"--spares"}, true, Count("--spares", &f->spares)},
      {{"--relay-fanout"}, true,
       [f](const std::string& v) {  // the last one given wins
         f->relay_fanout_auto = v == "auto";
         if (f->relay_fanout_auto) {
           f->relay_fanout = -1;
           return absl::OkStatus();
         }
         return Count("--relay-fanout", &f->relay_fanout)(v);
       }},
      {{"--no-preflight"}, false, SwitchFlag(&f->no_preflight)},
      {{"--no-tls"}, false, SwitchFlag(&f->no_tls)},
  };
  for (Flag& flag : TorchrunFlagTable(f)) table.push_back(std::move(flag));
  return table;
}

absl::Status ApplyNodeCount(const std::string& nnodes, JobSpec* spec) {
  std::vector<std::string> parts = absl::StrSplit(nnodes, ':');
  int lo = 0, hi = 0;
  bool ok = parts.size() <= 2 && absl::SimpleAtoi(parts[0], &lo) &&
            absl::SimpleAtoi(parts.back(), &hi) && lo >= 1 && hi >= lo;
  if (!ok) {
    return absl::InvalidArgumentError(absl::StrCat("--nnodes: expected N or MIN:MAX, got '", nnodes, "'"));
  }
  spec->min_nodes = lo;
  spec->max_nodes = hi;
  spec->nodes_auto = false;
  return absl::OkStatus();
}

absl::Status ApplyShowRanks(const std::string& show, JobSpec* spec) {
  spec->show_ranks.clear();
  spec->show_all_ranks = show == "all";
  if (spec->show_all_ranks) return absl::OkStatus();
  for (absl::string_view p : absl::StrSplit(show, ',')) {
    int r;
    if (!absl::SimpleAtoi(p, &r) || r < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--show-ranks: expected 'all' or ranks like 0,3, got '", show, "'"));
    }
    spec->show_ranks.push_back(r);
  }
  return absl::OkStatus();
}

}  // namespace

Flag::Setter PortFlag(const std::string& name, int* out) {
  return [name, out](const std::string& v) {
    if (!absl::SimpleAtoi(v, out) || *out < 0 || *out > 65535) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": expected 0..65535, got '", v, "'"));
    }
    return absl::OkStatus();
  };
}

Flag::Setter DurationFlag(const std::string& name, double* out,
                          std::function<bool(const std::string&)> word) {
  return [name, out, word](const std::string& v) {
    if (word && word(v)) return absl::OkStatus();
    absl::StatusOr<double> seconds = ParseDuration(v);
    if (!seconds.ok() || *seconds < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          name, ": expected a duration (seconds, or e.g. 20s, 5m, 1h30m), got '", v, "'"));
    }
    *out = *seconds;
    return absl::OkStatus();
  };
}

bool WantsRunHelp(const std::vector<std::string>& args) {
  RunFlags ignored;
  std::map<std::string, bool> takes_value;
  for (const Flag& flag : RunFlagTable(&ignored)) {
    for (const std::string& name : flag.names) takes_value[name] = flag.takes_value;
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") return false;
    if (a == "-h" || a == "--help") return true;
    if (a.size() < 2 || a[0] != '-') {
      // A script's arguments are its own; a job.yaml's are dlaunch's.
      if (absl::EndsWith(a, ".yaml") || absl::EndsWith(a, ".yml")) continue;
      return false;
    }
    auto it = takes_value.find(a);
    if (it != takes_value.end() && it->second) ++i;
  }
  return false;
}

absl::StatusOr<RunFlags> ParseRunFlags(const std::vector<std::string>& args) {
  const char* path = std::getenv("PATH");
  return ParseRunFlags(args, path != nullptr ? path : "");
}

absl::StatusOr<RunFlags> ParseRunFlags(const std::vector<std::string>& args,
                                       const std::string& path_var) {
  RunFlags f;
  const std::vector<Flag> table = RunFlagTable(&f);
  ParsedArgs parsed;
  size_t first = 0;
  if (absl::Status st = ParseFlagsUntilPositional(args, table, &parsed, &first); !st.ok()) {
    return st;
  }
  f.command = parsed.after_dashes;
  if (first < args.size()) {
    const std::string& target = args[first];
    const std::vector<std::string> rest(args.begin() + static_cast<long>(first) + 1, args.end());
    RunTargetKind kind = RunTargetKind::kProgram;
    if (!f.python_module) {
      absl::StatusOr<RunTargetKind> classified = ClassifyRunTarget(target, path_var);
      if (!classified.ok()) return classified.status();
      kind = *classified;
    }
    if (kind == RunTargetKind::kJobSpec) {
      // `dlaunch run job.yaml --nnodes 2 [-- command]`: the flags after a job.yaml are ours.
      f.spec_path = target;
      ParsedArgs after;
      if (absl::Status st = ParseFlags(rest, table, &after); !st.ok()) return st;
      if (!after.positional.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "unexpected argument '", after.positional[0], "' (put the worker command after `--`)"));
      }
      f.command = after.after_dashes;
    } else {
      if (f.python_module) {
        f.command = {kPythonInterpreter, "-m", target};
      } else if (kind == RunTargetKind::kPythonScript && !f.no_python) {
        f.command = {kPythonInterpreter, target};
      } else {
        f.command = {target};
      }
      f.command.insert(f.command.end(), rest.begin(), rest.end());
    }
  } else if (f.python_module && !f.command.empty()) {
    f.command.insert(f.command.begin(), {kPythonInterpreter, "-m"});
  } else if (f.python_module) {
    return absl::InvalidArgumentError("-m: give the module to run, e.g. `dlaunch run -m pkg.train`");
  }
  if (f.spec_path.empty() && f.command.empty()) {
    return absl::InvalidArgumentError(
        "give a job.yaml, a script (train.py) or a command after `--`");
  }
  return f;
}

absl::StatusOr<JobSpec> BuildRunSpec(const RunFlags& f) {
  JobSpec spec;
  if (!f.spec_path.empty()) {
    auto loaded = LoadJobSpec(f.spec_path);
    if (!loaded.ok()) return loaded.status();
    spec = *loaded;
  } else {
    spec.nodes_auto = f.nnodes.empty();
  }
  if (!f.command.empty()) spec.command = f.command;
  if (!f.nnodes.empty()) {
    if (absl::Status st = ApplyNodeCount(f.nnodes, &spec); !st.ok()) return st;
  }
  if (f.nproc_per_node >= 0) spec.nproc_per_node = f.nproc_per_node;
  if (!f.launcher.empty()) spec.node_launcher = f.launcher;
  if (!f.job_root.empty()) spec.job_root = f.job_root;
  if (!f.name.empty()) spec.name = f.name;
  if (f.port >= 0) spec.control_port = f.port;
  if (f.grace_s >= 0) spec.stop_grace_s = f.grace_s;
  if (f.heartbeat_s > 0) spec.heartbeat_interval_s = f.heartbeat_s;
  if (f.exit_timeout_s >= 0) spec.exit_timeout_s = f.exit_timeout_s;
  if (f.stall_timeout_s >= 0) {
    spec.stall_timeout_s = f.stall_timeout_s;
    spec.stall_detection = !f.stall_off;
  }
  if (f.join_timeout_s > 0) spec.join_timeout_s = f.join_timeout_s;
  if (f.last_call_s >= 0) spec.last_call_s = f.last_call_s;
  if (f.master_port >= 0) spec.master_port = f.master_port;
  if (f.standalone) {
    // Every node on this machine: no hosts, and the local launcher.
    if (!f.hosts.empty() || !spec.hosts.empty()) {
      return absl::InvalidArgumentError(
          "--standalone (or a loopback --master-addr/--rdzv-endpoint) runs every node on this "
          "machine, but the job names hosts");
    }
    if (!f.launcher.empty() && f.launcher != "local") {
      return absl::InvalidArgumentError(absl::StrCat(
          "--standalone (or a loopback --master-addr/--rdzv-endpoint) runs every node on this "
          "machine, but --launcher is ", f.launcher));
    }
    spec.node_launcher = "local";
  }
  if (f.max_restarts >= 0) spec.max_restarts = f.max_restarts;
  if (f.spares >= 0) spec.spare_nodes = f.spares;
  if (f.relay_fanout >= 0) {
    spec.relay_fanout = f.relay_fanout;
    spec.relay_fanout_auto = false;
  }
  if (f.relay_fanout_auto) spec.relay_fanout_auto = true;
  if (f.no_preflight) spec.preflight.enabled = false;
  if (f.no_tls) spec.control_tls = false;
  if (!f.show_ranks.empty()) {
    if (absl::Status st = ApplyShowRanks(f.show_ranks, &spec); !st.ok()) return st;
  }
  if (auto st = ValidateJobSpec(spec); !st.ok()) return st;
  return spec;
}

}  // namespace dlaunch
