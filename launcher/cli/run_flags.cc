#include "launcher/cli/run_flags.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/flags.h"
#include "launcher/spec/hostlist.h"
#include "launcher/spec/job_spec_parser.h"

namespace dlaunch {

const char kRunUsage[] =
    "usage: dlaunch run [job.yaml] [options] [-- command [args...]]\n"
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
    "  --grace SECONDS         SIGTERM -> SIGKILL grace when stopping workers\n"
    "  --heartbeat SECONDS     agent heartbeat interval\n"
    "  --exit-timeout SECONDS  a rank still running this long after another exited 0 is hung (0 = off)\n"
    "  --stall-timeout SECONDS a rank without progress this long is stalled (default: adaptive)\n"
    "  --join-timeout SECONDS  how long to wait for every node to join\n"
    "  --max-restarts N        restart the job in a new round up to N times on a failure\n"
    "  --spares K              start K extra agents that wait and replace lost nodes (local runs)\n"
    "  --no-preflight          skip the nodes' checks before round 0 (docs/preflight.md)\n"
    "  --relay-fanout K|auto   one relay per K agents carries their sessions to the launcher;\n"
    "                          auto: none under 2,000 agents, else one per 1,250\n"
    "                          (rendezvous.relay_fanout; docs/relays.md)\n"
    "  --no-tls                plain TCP for the control channel (rendezvous.tls: off;\n"
    "                          docs/security.md)\n";

namespace {

// Any string, kept as given (checked later, against the spec).
Flag::Setter Text(std::string* out) {
  return [out](const std::string& v) {
    *out = v;
    return absl::OkStatus();
  };
}

Flag::Setter Seconds(const std::string& name, double* out) {
  return [name, out](const std::string& v) {
    if (!absl::SimpleAtod(v, out) || *out < 0) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": not a non-negative number: '", v, "'"));
    }
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

Flag::Setter Port(int* out) {
  return [out](const std::string& v) {
    if (!absl::SimpleAtoi(v, out) || *out < 0 || *out > 65535) {
      return absl::InvalidArgumentError(absl::StrCat("--port: expected 0..65535, got '", v, "'"));
    }
    return absl::OkStatus();
  };
}

std::vector<Flag> RunFlagTable(RunFlags* f) {
  return {
      {{"--hosts"}, true, Hosts(&f->hosts)},
      {{"--nnodes"}, true, Text(&f->nnodes)},
      {{"--nproc-per-node", "--nproc_per_node"}, true, ProcsPerNode(&f->nproc_per_node)},
      {{"--launcher"}, true, Text(&f->launcher)},
      {{"--launcher-cmd"}, true, Text(&f->launcher_cmd)},
      {{"--job-dir"}, true, Text(&f->job_dir)},
      {{"--job-root"}, true, Text(&f->job_root)},
      {{"--name"}, true, Text(&f->name)},
      {{"--control-addr"}, true, Text(&f->control_addr)},
      {{"--port"}, true, Port(&f->port)},
      {{"--show-ranks"}, true, Text(&f->show_ranks)},
      {{"--grace"}, true, Seconds("--grace", &f->grace_s)},
      {{"--heartbeat"}, true, Seconds("--heartbeat", &f->heartbeat_s)},
      {{"--exit-timeout"}, true, Seconds("--exit-timeout", &f->exit_timeout_s)},
      {{"--stall-timeout"}, true, Seconds("--stall-timeout", &f->stall_timeout_s)},
      {{"--join-timeout"}, true, Seconds("--join-timeout", &f->join_timeout_s)},
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
      {{"--no-preflight"}, false,
       [f](const std::string&) {
         f->no_preflight = true;
         return absl::OkStatus();
       }},
      {{"--no-tls"}, false,
       [f](const std::string&) {
         f->no_tls = true;
         return absl::OkStatus();
       }},
  };
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

bool WantsRunHelp(const std::vector<std::string>& args) {
  for (const auto& a : args) {
    if (a == "--") return false;
    if (a == "-h" || a == "--help") return true;
  }
  return false;
}

absl::StatusOr<RunFlags> ParseRunFlags(const std::vector<std::string>& args) {
  RunFlags f;
  ParsedArgs parsed;
  if (absl::Status st = ParseFlags(args, RunFlagTable(&f), &parsed); !st.ok()) return st;
  f.command = parsed.after_dashes;
  if (parsed.positional.size() > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unexpected argument '", parsed.positional[1], "' (put the worker command after `--`)"));
  }
  if (!parsed.positional.empty()) f.spec_path = parsed.positional[0];
  if (f.spec_path.empty() && f.command.empty()) {
    return absl::InvalidArgumentError("give a job.yaml or a command after `--`");
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
  if (f.stall_timeout_s >= 0) spec.stall_timeout_s = f.stall_timeout_s;
  if (f.join_timeout_s > 0) spec.join_timeout_s = f.join_timeout_s;
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
