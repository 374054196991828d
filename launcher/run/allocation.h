// Node discovery: which hosts a job runs on, from the batch scheduler's environment (PBS Pro,
// Cobalt, Slurm), the job spec, or --hosts; pure functions with the environment injected.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/environment.h"
#include "launcher/spec/job_spec.h"

namespace dlaunch {

// Reads a whole file (the scheduler's nodefile).
using FileReader = std::function<absl::StatusOr<std::string>(const std::string& path)>;

// The batch allocation dlaunch finds itself in.
struct Allocation {
  std::string scheduler;               // "pbs", "cobalt", "slurm", or "" outside any allocation
  std::vector<std::string> hosts;      // in the scheduler's order, each once
  std::string job_id;                  // PBS_JOBID / COBALT_JOBID / SLURM_JOB_ID, "" if unset
  std::string node_launcher = "local";  // the launcher that reaches these hosts: mpiexec, ...
  std::string source;                  // where the hosts came from, e.g. "PBS_NODEFILE=/var/..."
};

// Detects the allocation from the environment, first match wins: PBS_NODEFILE (PBS Pro),
// COBALT_NODEFILE (Cobalt), SLURM_JOB_NODELIST or SLURM_NODELIST (hostlist syntax). None of them:
// an empty Allocation (local). Empty variables count as unset. A nodefile that cannot be read
// or lists no host, or a malformed nodelist, is FailedPrecondition naming the variable.
absl::StatusOr<Allocation> DetectAllocation(const EnvLookup& env, const FileReader& read_file);

// The same, reading the process environment and the real files.
absl::StatusOr<Allocation> DetectAllocation();

// Hosts of a nodefile: one per line, whitespace trimmed, blank lines skipped, duplicates dropped
// keeping the first (PBS writes a host once per slot).
std::vector<std::string> ParseNodefile(std::string_view text);

// The hosts a job runs on, with the node counts the rendezvous should expect.
struct HostPlan {
  std::vector<std::string> hosts;  // one agent per entry (the same name repeats locally)
  std::string source;              // "--hosts", "job.yaml hosts", the allocation's source, "local"
  int min_nodes = 1;
  int max_nodes = 1;
  // How agents are started on `hosts`: the spec's `launcher` unless it is "auto"; for "auto", the
  // allocation's launcher when inside one, "local" when every host is this machine, else "ssh".
  std::string node_launcher = "local";
  std::string scheduler;  // the allocation's, "" outside one (mpiexec under PBS is PALS)
  // Agents started beyond `hosts` that wait to replace lost nodes: nodes.spares copies of the
  // local host, or, with max_restarts > 0, the listed hosts beyond nodes.max.
  std::vector<std::string> spare_hosts;
  // Every host an agent is started on: `hosts`, then `spare_hosts`.
  std::vector<std::string> AgentHosts() const;
};

// Rule, first non-empty wins: `flag_hosts` (--hosts) > `spec.hosts` > `allocation.hosts` >
// local (copies of `local_host`).
// With `nodes: auto` every listed host is used (min = max = count; one node locally). With a
// count or {min, max}: the first max_nodes hosts are used, and fewer than min_nodes is an error
// (InvalidArgument for --hosts or job.yaml, FailedPrecondition for a scheduler's allocation);
// locally, max_nodes copies of `local_host`. `local_host`, "localhost" and "127.0.0.1" count as
// this machine when choosing the node launcher.
absl::StatusOr<HostPlan> ResolveHosts(const JobSpec& spec,
                                      const std::vector<std::string>& flag_hosts,
                                      const Allocation& allocation,
                                      const std::string& local_host);

}  // namespace dlaunch
