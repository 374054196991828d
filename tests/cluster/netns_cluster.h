// NetnsCluster: a test fixture owning a cluster of network-namespace hosts (head, h1..hN)
// made by the tests/cluster/netns-cluster tool, optionally running a real Slurm. Tests run
// commands "on" hosts, cut and heal links; the destructor tears everything down, also when
// an assertion failed half-way through a test.
#pragma once

#include <sys/types.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace dlaunch {
namespace testing {

// The outcome of a command run to completion (or to its deadline).
struct RunResult {
  int exit_code = -1;      // exit status; 128 + signal number when killed by a signal
  bool timed_out = false;  // the deadline passed and the command was killed
  std::string output;      // stdout and stderr, interleaved

  bool ok() const { return exit_code == 0 && !timed_out; }
};

// Environment variables added to (or replacing those of) the test's own environment.
using EnvOverrides = std::map<std::string, std::string>;

class NetnsCluster {
 public:
  // Why this machine cannot host a cluster ("" when it can): not root, or `ip netns`
  // unusable. Tests GTEST_SKIP() with this message.
  static std::string UnavailableReason();

  // Creates hosts head and h1..h<nhosts> under a fresh run directory in /tmp, after reaping
  // the clusters of test processes that died without tearing down.
  static absl::StatusOr<std::unique_ptr<NetnsCluster>> Start(int nhosts);

  ~NetnsCluster();
  NetnsCluster(const NetnsCluster&) = delete;
  NetnsCluster& operator=(const NetnsCluster&) = delete;

  // Runs `/bin/sh -c command` on `host` (its netns, its hostname, the cluster's /etc/hosts)
  // in the test's working directory, and waits for it, killing it at the deadline.
  RunResult RunOn(const std::string& host, const std::string& command, absl::Duration timeout,
                  const EnvOverrides& env = {});

  // Starts `/bin/sh -c command` on `host` in the background with its output appended to
  // `log_path`; returns the PID of the shell (-1 when it cannot start). The process runs in
  // its own process group; Stop() kills whatever of it is left.
  pid_t SpawnOn(const std::string& host, const std::string& command,
                const std::string& log_path, const EnvOverrides& env = {});

  // Waits for a process from SpawnOn; its exit code as in RunResult, or DeadlineExceeded.
  absl::StatusOr<int> WaitSpawned(pid_t pid, absl::Duration timeout);

  // Link down / up of the host's veth: its packets stop, its processes keep running.
  absl::Status CutLink(const std::string& host);
  absl::Status HealLink(const std::string& host);

  // munged, slurmctld on head, one slurmd per compute host; returns when all nodes are idle.
  // Clients then run on head with SLURM_CONF=SlurmConf() (or through BinDir()/sbatch ...).
  // With gpus_per_node > 0 each node offers that many GPUs as a GRES (fake devices: Slurm
  // grants and refuses GPU requests by them, nothing uses them).
  absl::Status StartSlurm(int gpus_per_node = 0);

  // Tears everything down (Slurm, processes, namespaces, links, routes). Idempotent. Keeps
  // the run directory when the current test has failed, for the logs in it.
  void Stop();

  // Runs a netns-cluster subcommand against this cluster.
  RunResult Tool(const std::vector<std::string>& args, absl::Duration timeout);

  const std::string& dir() const { return dir_; }          // run directory (shared by hosts)
  const std::string& prefix() const { return prefix_; }    // of namespaces and links
  const std::vector<std::string>& hosts() const { return hosts_; }  // h1..hN
  std::string HostIp(const std::string& host) const;       // "" for an unknown host
  std::string Namespace(const std::string& host) const { return prefix_ + "-" + host; }
  std::string BinDir() const { return dir_ + "/bin"; }     // rsh, hostexec, Slurm clients
  std::string RshPath() const { return dir_ + "/bin/rsh"; }  // ssh replacement for MPI
  std::string SlurmConf() const { return dir_ + "/slurm/etc/slurm.conf"; }

  static std::string ToolPath();  // tests/cluster/netns-cluster in the source tree

 private:
  NetnsCluster(std::string dir, int nhosts);
  absl::Status LoadState();

  std::string dir_;
  std::string prefix_;
  std::string net_;  // first three octets
  std::vector<std::string> hosts_;
  std::vector<pid_t> spawned_;
  bool stopped_ = false;
};

// Runs argv (no shell) with the environment overrides, to completion or the deadline.
RunResult RunCommand(const std::vector<std::string>& argv, absl::Duration timeout,
                     const EnvOverrides& env = {});

}  // namespace testing
}  // namespace dlaunch

// Skips the current test when the machine cannot host a NetnsCluster.
#define NETNS_CLUSTER_SKIP_IF_UNAVAILABLE()                                   \
  do {                                                                        \
    std::string netns_cluster_reason = ::dlaunch::testing::NetnsCluster::UnavailableReason(); \
    if (!netns_cluster_reason.empty()) GTEST_SKIP() << netns_cluster_reason;  \
  } while (0)
