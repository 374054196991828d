// Checks the cluster tests make on a dlaunch job that ran on a NetnsCluster: where the dlaunch
// binaries are, what its job directory says, and which of its processes are still alive on
// any host.
#pragma once

#include <sys/stat.h>

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "netns_cluster.h"

namespace dlaunch {
namespace testing {

// The build's dlaunch and dlaunch-agent.
// The build's bin/, or DLAUNCH_TEST_BIN_DIR's binaries where it is set (a bench that runs the
// same test against another build, side by side).
std::string DlaunchBinDir();
std::string DlaunchPath();
std::string AgentPath();
// "" when both are built, else which one is missing and how to build it (the tests skip
// with this message rather than fake a launcher).
std::string MissingDlaunchBinaries();

// tests/cluster/tcp_barrier_worker.py in the source tree.
std::string BarrierWorkerPath();

std::string ReadFileOrEmpty(const std::string& path);
void WriteFileOrDie(const std::string& path, const std::string& text, int mode = 0644);

// The only job directory under `job_root` ("" when there is none or several).
std::string OnlyJobDir(const std::string& job_root);

// Processes of the job still alive: any whose environment holds DLAUNCH_JOB_ID=<job_id>, and
// any inside the cluster's namespaces whose command line names dlaunch-agent, dlaunch-worker,
// the barrier or fault worker or `dlaunch run`. Each entry is "pid: command line".
std::vector<std::string> JobProcesses(const NetnsCluster& cluster, const std::string& job_id);

// Polls JobProcesses until it is empty or the deadline passes; returns the last list.
std::vector<std::string> WaitNoJobProcesses(const NetnsCluster& cluster,
                                            const std::string& job_id, absl::Duration timeout);

// GoogleTest checks that the ranks of each node of the barrier-worker job in `job_dir` were
// pinned to disjoint CPU sets that together cover this machine's CPUs (the node launcher, mpiexec,
// mpirun, srun or ssh, left the agent unbound; the namespace hosts share one machine's CPUs).
void ExpectRanksPinnedApart(const std::string& job_dir, int nnodes, int nproc);

// GoogleTest checks that the job in `job_dir` ran nnodes x nproc ranks of the barrier worker
// to completion across `hosts`: logs/rank-<r>.log for every rank, each saying it passed the
// barrier with every host taking part, and summary.json with "result": "succeeded" (or
// "success").
void ExpectBarrierJobSucceeded(const std::string& job_dir, int nnodes, int nproc,
                               const std::vector<std::string>& hosts);

// The job.yaml of a barrier-worker job, with `scheduler_yaml` (an indented `scheduler:` block)
// appended.
std::string BarrierJobYaml(const std::string& name, int nnodes, int nproc,
                           const std::vector<std::string>& worker_args,
                           const std::string& scheduler_yaml);

// Base of the tests that run dlaunch on a NetnsCluster: skips where namespaces or the dlaunch
// binaries are missing, starts the cluster and makes `job_root_`. A subclass's SetUp calls this
// one first and returns when it skipped or failed (`if (IsSkipped() || HasFatalFailure())`).
class DlaunchClusterTest : public ::testing::Test {
 protected:
  explicit DlaunchClusterTest(int nodes) : nodes_(nodes) {}

  void SetUp() override {
    NETNS_CLUSTER_SKIP_IF_UNAVAILABLE();
    std::string missing = MissingDlaunchBinaries();
    if (!missing.empty()) GTEST_SKIP() << missing;
    auto started = NetnsCluster::Start(nodes_);
    ASSERT_TRUE(started.ok()) << started.status();
    cluster_ = std::move(*started);
    job_root_ = MakeDir("runs");
  }

  // Makes <cluster dir>/<name> and returns its path.
  std::string MakeDir(const std::string& name) {
    std::string path = cluster_->dir() + "/" + name;
    EXPECT_EQ(mkdir(path.c_str(), 0755), 0) << path;
    return path;
  }

  const int nodes_;
  std::unique_ptr<NetnsCluster> cluster_;
  std::string job_root_;
};

}  // namespace testing
}  // namespace dlaunch
