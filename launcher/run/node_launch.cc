#include "launcher/run/node_launch.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/shell_quote.h"

namespace dlaunch {

absl::StatusOr<std::vector<std::vector<std::string>>> BuildNodeLaunchCommands(
    const NodeLaunchInput& in) {
  if (in.hosts.empty()) return absl::InvalidArgumentError("no hosts to launch on");
  if (in.agent_argv.empty()) return absl::InvalidArgumentError("no agent command");
  const std::string n = std::to_string(in.hosts.size());
  std::vector<std::vector<std::string>> out;
  auto with_prefix = [&](std::vector<std::string> prefix) {
    if (!in.prefix.empty()) prefix = in.prefix;
    prefix.insert(prefix.end(), in.agent_argv.begin(), in.agent_argv.end());
    out.push_back(std::move(prefix));
  };
  // Node i's agent command: the common one, with its own --control when it has one.
  auto agent_argv = [&](size_t i) {
    std::vector<std::string> argv = in.agent_argv;
    if (i >= in.control_per_node.size()) return argv;
    for (size_t a = 0; a + 1 < argv.size(); ++a) {
      if (argv[a] == "--control") argv[a + 1] = in.control_per_node[i];
    }
    return argv;
  };
  if (in.kind == "local") {
    for (size_t i = 0; i < in.hosts.size(); ++i) out.push_back(agent_argv(i));
  } else if (in.kind == "ssh") {
    for (size_t i = 0; i < in.hosts.size(); ++i) {
      std::vector<std::string> quoted;
      for (const auto& w : agent_argv(i)) quoted.push_back(ShellQuote(w));
      std::string remote = absl::StrJoin(quoted, " ");
      if (!in.workdir.empty()) remote = absl::StrCat("cd ", ShellQuote(in.workdir), " && exec ", remote);
      std::vector<std::string> cmd;
      if (in.prefix.empty()) {
        cmd = {in.ssh, "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=accept-new"};
      } else {
        cmd = in.prefix;
      }
      cmd.push_back(in.hosts[i]);
      cmd.push_back(remote);
      out.push_back(std::move(cmd));
    }
  } else if (in.kind == "mpiexec") {
    // PALS (Polaris) and MPICH's hydra both take this form; only the binding flag differs.
    std::vector<std::string> p = {"mpiexec", "-n", n, "--ppn", "1"};
    if (in.scheduler == "pbs") {
      p.insert(p.end(), {"--cpu-bind", "none"});
    } else {
      p.insert(p.end(), {"-bind-to", "none"});
    }
    if (!in.hostfile.empty()) p.insert(p.end(), {"--hostfile", in.hostfile});
    with_prefix(p);
  } else if (in.kind == "mpirun") {
    // Open MPI (ThetaGPU): one process per node. Unbound: with one or two ranks per node
    // Open MPI binds each to a single core, and every worker would inherit that core.
    std::vector<std::string> p = {"mpirun", "-n", n, "-npernode", "1", "--bind-to", "none"};
    if (!in.hostfile.empty()) p.insert(p.end(), {"-hostfile", in.hostfile});
    with_prefix(p);
  } else if (in.kind == "srun") {
    with_prefix({"srun", "-N", n, "--ntasks-per-node=1", "--ntasks=" + n, "--cpu-bind=none",
                 "--nodelist=" + absl::StrJoin(in.hosts, ",")});
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown node launcher '", in.kind, "' (expected local, ssh, mpiexec, mpirun or srun)"));
  }
  return out;
}

}  // namespace dlaunch
