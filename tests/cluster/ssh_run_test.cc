// `dlaunch run` inside an interactive allocation of three hosts, its agents started over ssh
// (the cluster's ssh replacement, which like sshd gives each command a fresh login
// environment): the job spans the hosts, Ctrl-C leaves nothing behind on any of them, and the
// LibTorch worker trains across them when it is built.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <memory>
#include <regex>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cluster_job_checks.h"
#include "gtest/gtest.h"
#include "netns_cluster.h"

namespace dlaunch {
namespace testing {
namespace {

constexpr int kNodes = 3;
constexpr char kSshHosts[] = "hosts: [h1, h2, h3]\nlauncher: ssh\n";

class SshRunTest : public DlaunchClusterTest {
 protected:
  SshRunTest() : DlaunchClusterTest(kNodes) {}

  void SetUp() override {
    DlaunchClusterTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    job_yaml_ = cluster_->dir() + "/job.yaml";
  }

  // The environment of `dlaunch run` on the first host.
  EnvOverrides RunEnv() {
    const char* path = getenv("PATH");
    return {{"DLAUNCH_SSH", cluster_->RshPath()},
            {"DLAUNCH_JOB_ROOT", job_root_},
            {"PATH", absl::StrCat(DLAUNCH_BIN_DIR, ":", path ? path : "/usr/bin:/bin")}};
  }
  std::string RunCommandLine() {
    return absl::StrCat("cd ", cluster_->dir(), " && exec ", DlaunchPath(), " run ", job_yaml_);
  }

  std::string job_yaml_;
};

TEST_F(SshRunTest, JobRunsAcrossHosts) {
  WriteFileOrDie(job_yaml_, BarrierJobYaml("cluster-ssh", kNodes, 2, {}, kSshHosts));
  RunResult run = cluster_->RunOn("h1", RunCommandLine(), absl::Seconds(120), RunEnv());
  EXPECT_TRUE(run.ok()) << "dlaunch run exit " << run.exit_code << ":\n" << run.output;
  std::string job_dir = OnlyJobDir(job_root_);
  ASSERT_FALSE(job_dir.empty()) << run.output;
  ExpectBarrierJobSucceeded(job_dir, kNodes, 2, cluster_->hosts());
  std::string job_id = job_dir.substr(job_dir.rfind('/') + 1);
  std::vector<std::string> left = WaitNoJobProcesses(*cluster_, job_id, absl::Seconds(15));
  EXPECT_TRUE(left.empty()) << absl::StrJoin(left, "\n");
}

// The agents on h1, h2 and h3 reach the launcher through two relays on h1 (docs/relays.md):
// each ssh command names its node's relay, and relays listen on h1's address for them.
TEST_F(SshRunTest, JobRunsAcrossHostsThroughRelays) {
  std::string yaml = BarrierJobYaml("cluster-relays", kNodes, 2, {}, kSshHosts);
  const std::string rendezvous = "rendezvous:\n";
  ASSERT_NE(yaml.find(rendezvous), std::string::npos) << yaml;
  yaml.insert(yaml.find(rendezvous) + rendezvous.size(), "  relay_fanout: 2\n");
  WriteFileOrDie(job_yaml_, yaml);
  RunResult run = cluster_->RunOn("h1", RunCommandLine(), absl::Seconds(120), RunEnv());
  EXPECT_TRUE(run.ok()) << "dlaunch run exit " << run.exit_code << ":\n" << run.output;
  EXPECT_TRUE(absl::StrContains(run.output, "2 relay(s) carry the agents' sessions")) << run.output;
  std::string job_dir = OnlyJobDir(job_root_);
  ASSERT_FALSE(job_dir.empty()) << run.output;
  ExpectBarrierJobSucceeded(job_dir, kNodes, 2, cluster_->hosts());
  // Node i's agent used relay i mod 2: relay 0 carried h1's and h3's sessions, relay 1 h2's.
  EXPECT_TRUE(absl::StrContains(ReadFileOrEmpty(job_dir + "/relays/relay-0.log"), " 2 agent session(s)"))
      << ReadFileOrEmpty(job_dir + "/relays/relay-0.log");
  EXPECT_TRUE(absl::StrContains(ReadFileOrEmpty(job_dir + "/relays/relay-1.log"), " 1 agent session(s)"))
      << ReadFileOrEmpty(job_dir + "/relays/relay-1.log");
  std::string job_id = job_dir.substr(job_dir.rfind('/') + 1);
  std::vector<std::string> left = WaitNoJobProcesses(*cluster_, job_id, absl::Seconds(15));
  EXPECT_TRUE(left.empty()) << absl::StrJoin(left, "\n");
}

TEST_F(SshRunTest, InterruptLeavesNoProcessOnAnyHost) {
  WriteFileOrDie(job_yaml_,
                 BarrierJobYaml("cluster-sigint", kNodes, 2, {"--sleep", "600"}, kSshHosts));
  const std::string out = cluster_->dir() + "/dlaunch.out";
  pid_t launcher = cluster_->SpawnOn("h1", RunCommandLine(), out, RunEnv());
  ASSERT_GT(launcher, 0);

  // Running on every host: all ranks are past the barrier.
  std::string job_dir;
  int running = 0;
  absl::Time deadline = absl::Now() + absl::Seconds(90);
  while (absl::Now() < deadline && running < kNodes * 2) {
    if (job_dir.empty()) job_dir = OnlyJobDir(job_root_);
    running = 0;
    for (int r = 0; !job_dir.empty() && r < kNodes * 2; ++r) {
      running += absl::StrContains(
          ReadFileOrEmpty(absl::StrCat(job_dir, "/logs/rank-", r, ".log")), "barrier passed");
    }
    usleep(100000);
  }
  ASSERT_EQ(running, kNodes * 2) << ReadFileOrEmpty(out);
  std::string job_id = job_dir.substr(job_dir.rfind('/') + 1);
  ASSERT_FALSE(JobProcesses(*cluster_, job_id).empty());

  // SIGINT to the launcher alone, not its process group: a terminal's Ctrl-C would also reach
  // the local ends of real ssh sessions, but here those are the remote agents themselves, so
  // signalling the group would stop them without the launcher doing its part.
  ASSERT_EQ(kill(launcher, SIGINT), 0);
  absl::StatusOr<int> exit_code = cluster_->WaitSpawned(launcher, absl::Seconds(60));
  ASSERT_TRUE(exit_code.ok()) << exit_code.status() << "\n" << ReadFileOrEmpty(out);
  EXPECT_EQ(*exit_code, 130) << ReadFileOrEmpty(out);
  std::vector<std::string> left = WaitNoJobProcesses(*cluster_, job_id, absl::Seconds(30));
  EXPECT_TRUE(left.empty()) << "left on the hosts after Ctrl-C:\n" << absl::StrJoin(left, "\n")
                            << "\n" << ReadFileOrEmpty(out);
}

TEST_F(SshRunTest, LibTorchWorkerTrainsAcrossHosts) {
  const std::string worker = std::string(DLAUNCH_BIN_DIR) + "/dlaunch-worker";
  if (access(worker.c_str(), X_OK) != 0) {
    GTEST_SKIP() << worker << " is not built (LibTorch not found, or DLAUNCH_BUILD_WORKER=OFF)";
  }
  // Three ranks, one per host, a few steps of a small MLP on synthetic data: c10d's TCPStore
  // and Gloo all-reduces cross the hosts' links.
  WriteFileOrDie(job_yaml_,
                 absl::StrCat("name: cluster-ddp\nnodes: 3\nnproc_per_node: 1\n", kSshHosts,
                              "command: [\"", worker, "\", --model, mlp, --dataset, synthetic, ",
                              "--image-shape, \"1,8,8\", --synthetic-samples, 512, --steps, 5, ",
                              "--batch-size, 16, --store-timeout, 60]\n",
                              "stop:\n  grace: 2\n"));
  RunResult run = cluster_->RunOn("h1", RunCommandLine(), absl::Seconds(240), RunEnv());
  EXPECT_TRUE(run.ok()) << "dlaunch run exit " << run.exit_code << ":\n" << run.output;
  std::string job_dir = OnlyJobDir(job_root_);
  ASSERT_FALSE(job_dir.empty()) << run.output;
  EXPECT_TRUE(absl::StrContains(ReadFileOrEmpty(job_dir + "/summary.json"), "\"succeeded\""))
      << ReadFileOrEmpty(job_dir + "/summary.json") << "\n" << run.output;
  // Every rank ran on its own host, trained, and its reports reached the launcher (only rank 0
  // prints; the others report on the agent's socket).
  EXPECT_TRUE(absl::StrContains(ReadFileOrEmpty(job_dir + "/logs/rank-0.log"), "done: 5 steps, 3 ranks"))
      << ReadFileOrEmpty(job_dir + "/logs/rank-0.log");
  std::string metrics = ReadFileOrEmpty(job_dir + "/metrics.jsonl");
  for (int r = 0; r < 3; ++r) {
    const std::regex report(absl::StrCat("\"node_id\":", r,
                                         ",\"round\":0,\"report\":\\{\"kind\":\"[A-Z_]+\",\"rank\":", r, ","));
    EXPECT_TRUE(std::regex_search(metrics, report))
        << "no report from rank " << r << " on node " << r << ":\n" << metrics;
  }
  std::string events = ReadFileOrEmpty(job_dir + "/events.jsonl");
  for (const std::string& host : cluster_->hosts()) {
    EXPECT_TRUE(absl::StrContains(events, "\"host\":\"" + host + "\"")) << events;
  }
}

}  // namespace
}  // namespace testing
}  // namespace dlaunch
