// `dlaunch run`'s command line: the flags (one table, common/flags.h) and how they merge into
// the job spec. Pure; unit-tested in tests/launcher/cli/run_flags_test.cc.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/flags.h"
#include "launcher/spec/job_spec.h"

namespace dlaunch {

extern const char kRunUsage[];

// What `dlaunch run` was asked on its command line, before the spec file is merged in.
struct RunFlags {
  std::string spec_path;                  // job.yaml, "" for a command-line job
  std::vector<std::string> command;       // after `--`, or a script and its arguments
  std::vector<std::string> hosts;         // --hosts a,b,c (hostlist syntax allowed)
  std::string nnodes;                     // --nnodes N or MIN:MAX
  int nproc_per_node = -1;                // --nproc-per-node (-1 = not given, 0 = one per GPU)
  std::string launcher;                   // --launcher
  std::string launcher_cmd;               // --launcher-cmd "mpiexec -n 4 --ppn 1"
  std::string job_dir;                    // --job-dir
  std::string job_root;                   // --job-root
  std::string name;                       // --name
  std::string control_addr;               // --control-addr (advertised to agents)
  int port = -1;                          // --port
  std::string show_ranks;                 // --show-ranks all|0,1
  double grace_s = -1;                    // --grace
  double heartbeat_s = -1;                // --heartbeat
  double exit_timeout_s = -1;             // --exit-timeout (0 = off)
  double stall_timeout_s = -1;            // --stall-timeout (0 or auto = adaptive)
  bool stall_off = false;                 // --stall-timeout off
  double join_timeout_s = -1;             // --join-timeout, --rdzv-conf join_timeout=
  double last_call_s = -1;                // --rdzv-conf last_call_timeout=
  int master_port = -1;                   // --master-port (rendezvous.master_port)
  // --standalone, or a loopback --master-addr / --rdzv-endpoint: every node on this machine,
  // whatever allocation this shell is in.
  bool standalone = false;
  bool python_module = false;             // -m: the target is a module, run as python3 -m
  bool no_python = false;                 // --no-python: the target runs as it is
  int max_restarts = -1;                  // --max-restarts
  int spares = -1;                        // --spares (nodes.spares)
  int relay_fanout = -1;                  // --relay-fanout (rendezvous.relay_fanout)
  bool relay_fanout_auto = false;         // --relay-fanout auto
  bool no_preflight = false;              // --no-preflight (preflight: off)
  bool no_tls = false;                    // --no-tls (rendezvous.tls: off)
};

// Setters shared by run's own flags and torchrun's (torchrun_flags.h). A duration is written
// as job.yaml writes it (ParseDuration: 20s, 5m, 1h30m, or seconds), never negative; `word`,
// when given, first takes the words that flag has ("off"), returning true when it did.
Flag::Setter DurationFlag(const std::string& name, double* out,
                          std::function<bool(const std::string&)> word = nullptr);
Flag::Setter PortFlag(const std::string& name, int* out);

// The interpreter a Python script target runs with, as `-- python3 train.py` would.
inline constexpr char kPythonInterpreter[] = "python3";

// True when `args` ask for help: before any `--`, and before a target that is not a job.yaml
// (a script's own --help is the script's).
bool WantsRunHelp(const std::vector<std::string>& args);

// Parses the arguments after `run`, torchrun's way: flags, then a target (a job.yaml, a script
// or a program: ClassifyRunTarget, looking programs up on `path_var`) with its arguments, or a
// command after `--`. InvalidArgument with a one-line message on bad input, which names the
// flag; torchrun's flags that mean nothing here say why.
absl::StatusOr<RunFlags> ParseRunFlags(const std::vector<std::string>& args,
                                       const std::string& path_var);
// The same, with this process's $PATH.
absl::StatusOr<RunFlags> ParseRunFlags(const std::vector<std::string>& args);

// Merges flags into the spec (flags win) and validates the result.
absl::StatusOr<JobSpec> BuildRunSpec(const RunFlags& flags);

}  // namespace dlaunch
