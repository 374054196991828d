#include "launcher/cli/torchrun_flags.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace dlaunch {
namespace {

bool IsLoopback(absl::string_view host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || absl::StartsWith(host, "127.");
}

// torchrun's --rdzv-endpoint HOST[:PORT]: where agents reach the rendezvous, which here is the
// launcher's control endpoint. A loopback host means every node is on this machine.
Flag::Setter RendezvousEndpoint(RunFlags* f) {
  return [f](const std::string& v) -> absl::Status {
    std::string host = v, port;
    const size_t colon = v.rfind(':');
    const bool bracketed = !v.empty() && v[0] == '[';
    if (colon != std::string::npos && (bracketed ? colon > 0 && v[colon - 1] == ']'
                                                 : v.find(':') == colon)) {
      host = v.substr(0, colon);
      port = v.substr(colon + 1);
    }
    if (host.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--rdzv-endpoint: expected HOST or HOST:PORT, got '", v, "'"));
    }
    if (!port.empty()) {
      if (absl::Status st = PortFlag("--rdzv-endpoint", &f->port)(port); !st.ok()) return st;
    }
    if (IsLoopback(host)) {
      f->standalone = true;
    } else {
      f->control_addr = host;
    }
    return absl::OkStatus();
  };
}

// torchrun's --rdzv-conf key=value,...: the keys dlaunch's rendezvous has.
Flag::Setter RendezvousConf(RunFlags* f) {
  return [f](const std::string& v) -> absl::Status {
    for (absl::string_view item : absl::StrSplit(v, ',', absl::SkipEmpty())) {
      std::pair<std::string, std::string> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
      double* out = kv.first == "join_timeout"        ? &f->join_timeout_s
                    : kv.first == "last_call_timeout" ? &f->last_call_s
                                                      : nullptr;
      if (out == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--rdzv-conf: '", kv.first,
            "' has no meaning in dlaunch; it takes join_timeout and last_call_timeout"));
      }
      if (absl::Status st = DurationFlag(absl::StrCat("--rdzv-conf ", kv.first), out)(kv.second);
          !st.ok()) {
        return st;
      }
    }
    return absl::OkStatus();
  };
}

// A torchrun flag that has no meaning here: refused, saying why and what does the job instead.
Flag Meaningless(std::vector<std::string> names, bool takes_value, std::string why) {
  const std::string shown = names[0];
  return {std::move(names), takes_value, [shown, why](const std::string&) {
            return absl::InvalidArgumentError(
                absl::StrCat(shown, " has no meaning in dlaunch: ", why));
          }};
}

}  // namespace

std::vector<Flag> TorchrunFlagTable(RunFlags* f) {
  return {
      // Where they mean something here.
      {{"--standalone"}, false, SwitchFlag(&f->standalone)},
      {{"--master-port", "--master_port"}, true, PortFlag("--master-port", &f->master_port)},
      {{"--master-addr", "--master_addr"}, true,
       [f](const std::string& v) {
         if (!IsLoopback(v)) {
           return absl::InvalidArgumentError(absl::StrCat(
               "--master-addr ", v, " has no meaning in dlaunch: every rank gets node 0's address "
               "as MASTER_ADDR (docs/environment.md); give --hosts or run in the allocation"));
         }
         f->standalone = true;
         return absl::OkStatus();
       }},
      {{"--rdzv-endpoint", "--rdzv_endpoint"}, true, RendezvousEndpoint(f)},
      {{"--rdzv-backend", "--rdzv_backend"}, true,
       [](const std::string& v) {
         if (v == "c10d" || v == "static") return absl::OkStatus();
         return absl::InvalidArgumentError(absl::StrCat(
             "--rdzv-backend ", v, " has no meaning in dlaunch: the launcher is the rendezvous "
             "(c10d and static are accepted)"));
       }},
      {{"--rdzv-id", "--rdzv_id"}, true, StringFlag("--rdzv-id", &f->name)},
      {{"--rdzv-conf", "--rdzv_conf"}, true, RendezvousConf(f)},
      {{"-m", "--module"}, false, SwitchFlag(&f->python_module)},
      {{"--no-python", "--no_python"}, false, SwitchFlag(&f->no_python)},
      // Where they mean nothing.
      Meaningless({"--node-rank", "--node_rank"}, true,
                  "run dlaunch once, not once per node: it starts every node's agent and numbers "
                  "the nodes itself"),
      Meaningless({"--monitor-interval", "--monitor_interval"}, true,
                  "agents watch their workers continuously and report every --heartbeat"),
      Meaningless({"--start-method", "--start_method"}, true,
                  "every worker is a process of its own, started by the node's agent"),
      Meaningless({"--role"}, true, "every worker runs the one command"),
      Meaningless({"--log-dir", "--log_dir"}, true,
                  "every rank's output goes to <job dir>/logs/rank-N.log (--job-root, --job-dir)"),
      Meaningless({"--logs-specs", "--logs_specs"}, true,
                  "every rank's output goes to <job dir>/logs/rank-N.log (--job-root, --job-dir)"),
      Meaningless({"--redirects", "-r"}, true,
                  "every rank's output is logged and shown live (--show-ranks chooses the ranks)"),
      Meaningless({"--tee", "-t"}, true,
                  "every rank's output is logged and shown live (--show-ranks chooses the ranks)"),
      Meaningless({"--local-ranks-filter", "--local_ranks_filter"}, true,
                  "--show-ranks chooses the ranks whose output is shown (global ranks)"),
      Meaningless({"--local-addr", "--local_addr"}, true,
                  "each agent finds its own address; --control-addr is where agents reach the "
                  "launcher"),
      Meaningless({"--run-path", "--run_path"}, false,
                  "a script runs in its own interpreter: give train.py"),
  };
}

}  // namespace dlaunch
