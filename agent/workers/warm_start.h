// Warm starts (restarts.warm_start in job.yaml, docs/restarts.md): a per-node warm process, the
// "zygote", runs the job's Python interpreter with python/src/dlaunch/_zygote.py (embedded in
// the agent), imports the libraries the job's script imports (anywhere in it), and forks a
// rank on demand, so that a rank started anew (a replaced rank, a promoted spare) skips the
// interpreter's start and `import torch`. The rank is forked twice inside it, so it ends up the
// agent's own child (the agent is the subreaper of its descendants): the agent reaps, signals,
// dumps and sweeps it exactly as a rank it spawned. WarmProcessLauncher puts this behind
// ChildSupervisor's ProcessLauncher seam, and falls back to a plain spawn whenever the warm
// process is not there, not warm yet, or refuses.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/process.h"
#include "common/process_launcher.h"

namespace dlaunch {

// The embedded _zygote.py (generated at build time from the Python file).
extern const char kZygoteProgram[];

// True for dlaunch-worker (argv[0]'s file name), whose own serving mode is its warm process
// (worker/warm_serve.h: LibTorch loaded, the data set read, the same protocol).
bool IsDlaunchWorker(const std::vector<std::string>& argv);

// True for a command the warm process can start: a Python interpreter running a script file
// (not -m, -c or standard input), or dlaunch-worker.
bool WarmStartable(const std::vector<std::string>& argv);

// The warm process's command for the worker command `argv`: its interpreter and interpreter
// flags (-u, -O, -X ..., so the ranks get the same), then -c <program> <socket> <script>; for
// dlaunch-worker, the same program with --warm-serve <socket> before the job's flags.
std::vector<std::string> ZygoteCommand(const std::vector<std::string>& argv,
                                       const std::string& socket_path);

// A rank's start request in the warm process's wire format (the length prefix not included):
// the fields _zygote.py documents, from `options` (argv, envp, workdir, cpu_affinity,
// parent_death_signal, traceable_by_parent) and the agent's pid.
std::string ZygoteRequestBody(const SpawnOptions& options, pid_t agent);

// One node's warm process.
class Zygote {
 public:
  using LogFn = std::function<void(const std::string&)>;
  // Starts it for ranks of the worker command `worker` (its argv, environment and working
  // directory), outside the workers' cgroup, in a new private directory for its socket.
  // Returns at once: it is warm once its socket accepts (TryFork says "not warm yet" before).
  static absl::StatusOr<std::unique_ptr<Zygote>> Start(const SpawnOptions& worker);
  ~Zygote();  // SIGKILL to it, reaped; its directory removed

  // Forks a rank as `options` asks (capture_output must be on; cgroup_procs_fd is passed on).
  // The result is the agent's child, recorded as spawned (common/process.h); its exec_status_fd
  // is -1. Unavailable: not warm yet, or gone (then `alive()` turns false); other errors: it
  // refused this rank (the reason is in the message).
  absl::StatusOr<PendingProcess> TryFork(const SpawnOptions& options);
  // False once the warm process has exited (reaped here; `exit_text` says how).
  bool alive();
  const std::string& exit_text() const { return exit_text_; }
  // It ended on its own with an exit code (it refused to serve, or its imports failed), as it
  // would again: not worth a new start. A signal (the OOM killer, a kill) is.
  bool refused() const { return refused_; }
  pid_t pid() const { return pid_; }

 private:
  Zygote() = default;
  pid_t pid_ = -1;
  std::string dir_;
  std::string socket_;
  std::string exit_text_;
  bool refused_ = false;
};

// A ProcessLauncher that starts each rank from the warm process `zygote()` returns (null: none)
// when it can, else as SystemProcessLauncher does; TakePath says which way a rank started.

class WarmProcessLauncher : public SystemProcessLauncher {
 public:
  WarmProcessLauncher(boost::asio::io_context& io, std::function<Zygote*()> zygote)
      : SystemProcessLauncher(io), zygote_(std::move(zygote)) {}

  absl::StatusOr<PendingProcess> Fork(const SpawnOptions& options) override;
  absl::StatusOr<SpawnedProcess> AwaitExec(PendingProcess pending) override;
  // Which way `pid` started, asked once (forgotten after): "warm" or "cold: <why>".
  std::string TakePath(pid_t pid);

 private:
  std::function<Zygote*()> zygote_;
  std::map<pid_t, std::string> paths_;  // of the ranks started since the last round began
};

}  // namespace dlaunch
