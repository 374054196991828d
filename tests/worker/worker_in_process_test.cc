// dlaunch-worker's in-process restart end to end (docs/restarts.md, "In-process restart"): the
// real dlaunch and agents, 2 local nodes x 2 ranks on Fashion-MNIST under `restart: in_process`,
// rank 1 SIGKILLed from outside mid-run (wherever it is: in a step, in its all-reduce, between
// steps). The other three ranks must keep their process, the killed one start anew and take the
// state from a kept one by broadcast (not the checkpoint), and every rank end with parameters
// bit-identical to an uninterrupted run of the same steps; with restarts.warm_start on, the killed
// one is forked from its node's warm dlaunch-worker.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/worker/worker_process_fixture.h"

namespace dlaunch::worker {
namespace {

using process_testing::RankResult;
using process_testing::ReadText;
using process_testing::With;
using process_testing::WorkerProcessTest;

constexpr char kFashionMnistTrain[] =
    "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz";
constexpr int kSteps = 60;
constexpr int kKillAfterStep = 20;

// One intra-op thread: the agents give each rank the cores it owns, and with more than one
// thread LibTorch's CPU matrix products round differently from the uninterrupted run's.
std::vector<std::string> JobArgs() {
  return {"--model", "mlp", "--dataset", "fashion-mnist", "--steps", std::to_string(kSteps),
          "--batch-size", "32", "--no-eval", "--threads", "1", "--report-every", "1000",
          "--store-timeout", "120"};
}

// The journal's worker_started events: rank -> restart_path of its latest one ("" in round 0).
std::map<int, std::string> RestartPaths(const std::string& events) {
  std::map<int, std::string> paths;
  std::istringstream in(events);
  for (std::string line; std::getline(in, line);) {
    const size_t at = line.find("\"worker_started\":{\"rank\":");
    if (at == std::string::npos) continue;
    const int rank = std::stoi(line.substr(at + 25));
    const size_t p = line.find("\"restart_path\":\"", at);
    if (p == std::string::npos) continue;
    const size_t begin = p + 16;
    paths[rank] = line.substr(begin, line.find('"', begin) - begin);
  }
  return paths;
}

// The pid of rank `rank`'s first worker_started event, or -1.
pid_t FirstPidOf(const std::string& events, int rank) {
  const std::string key = "\"worker_started\":{\"rank\":" + std::to_string(rank) + ",";
  const size_t at = events.find(key);
  if (at == std::string::npos) return -1;
  const size_t p = events.find("\"pid\":", at);
  return p == std::string::npos ? -1 : std::stoi(events.substr(p + 6));
}

// Steps recorded in a rank's step trace (every step is, for the first 500).
int StepsTraced(const std::string& trace) {
  int steps = 0;
  std::istringstream in(trace);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("{\"step\":", 0) == 0) ++steps;
  }
  return steps;
}

// The latest worker_started event's start_path of rank `rank` ("" when none).
std::string LatestStartPath(const std::string& events, int rank) {
  const std::string key = "\"worker_started\":{\"rank\":" + std::to_string(rank) + ",";
  const size_t at = events.rfind(key);
  if (at == std::string::npos) return "";
  const size_t line_end = events.find('\n', at);
  const size_t p = events.find("\"start_path\":\"", at);
  if (p == std::string::npos || p > line_end) return "";
  const size_t begin = p + 14;
  return events.substr(begin, events.find('"', begin) - begin);
}

class WorkerInProcessTest : public WorkerProcessTest {
 protected:
  // Runs the job, SIGKILLs rank 1 after step kKillAfterStep, checks the restart paths and the
  // parameters against an uninterrupted run; returns the journal.
  std::string KillRankOneAndCompare(bool warm) {
    auto straight = RunRanks(4, With(JobArgs(), {"--save-params", dir_ + "/straight{rank}"}));
    ExpectAllSucceeded(straight);
    // Each process saves under the rank it was started as (kept ranks keep theirs here).
    std::string command = "[\"" + worker_bin_ + "\"";
    for (const std::string& a : With(JobArgs(), {"--checkpoint-dir", dir_ + "/ckpt",
                                                 "--checkpoint-every", "10", "--save-params",
                                                 dir_ + "/kept{rank}"})) {
      command += ", \"" + a + "\"";
    }
    command += "]";
    {
      std::ofstream yaml(dir_ + "/job.yaml");
      yaml << "name: worker-in-process\nnodes: 2\nnproc_per_node: 2\ncommand: " << command
           << "\nmax_restarts: 1\nrestart: in_process\nheartbeat:\n  interval: 1s\n  misses: 3\n"
              "stop:\n  grace: 4s\n  exit_timeout: 5s\nrendezvous:\n  join_timeout: 120s\n"
              "cpus:\n  binding: none\n"
           << (warm ? "restarts:\n  warm_start: on\n" : "");
    }
    const std::string job = dir_ + "/job";
    RankResult run;
    std::thread dlaunch([&] {
      run = RunDlaunch({dir_ + "/job.yaml", "--job-dir", job, "--no-preflight"},
                       std::chrono::seconds(300));
    });
    pid_t victim = -1;
    const bool reached = WaitFor(
        [&] {
          victim = FirstPidOf(ReadText(job + "/events.jsonl"), 1);
          return victim > 0 && StepsTraced(ReadText(job + "/trace/rank-1.jsonl")) >= kKillAfterStep;
        },
        std::chrono::seconds(200));
    if (reached) kill(victim, SIGKILL);
    dlaunch.join();
    EXPECT_TRUE(reached) << "rank 1 did not reach step " << kKillAfterStep << "\n" << run.log;
    EXPECT_EQ(run.exit_code, 0) << run.log;

    const std::string events = ReadText(job + "/events.jsonl");
    const std::map<int, std::string> want = {
        {0, "in_process"}, {1, "respawn"}, {2, "in_process"}, {3, "in_process"}};
    EXPECT_EQ(RestartPaths(events), want) << events;
    const std::string rank1 = ReadText(job + "/logs/rank-1.log");
    EXPECT_NE(rank1.find("state of step"), std::string::npos) << "state sent by a kept rank\n"
                                                             << rank1;
    EXPECT_EQ(rank1.find("resumed from step"), std::string::npos) << "not the checkpoint\n" << rank1;
    for (int rank = 0; rank < 4; ++rank) {
      const std::string kept = ReadText(dir_ + "/kept" + std::to_string(rank));
      EXPECT_FALSE(kept.empty()) << "rank " << rank;
      EXPECT_TRUE(ReadText(dir_ + "/straight" + std::to_string(rank)) == kept)
          << "rank " << rank << " differs from the uninterrupted run";
    }
    return events;
  }
};

TEST_F(WorkerInProcessTest, KeptRanksAndARespawnedOneEndBitIdenticalAfterAKill) {
  if (access(kFashionMnistTrain, R_OK) != 0) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  KillRankOneAndCompare(/*warm=*/false);
}

// restarts.warm_start with dlaunch-worker (worker/warm_serve.h): the replacement is forked from
// its node's warm dlaunch-worker, which has LibTorch loaded and Fashion-MNIST read, and trains
// exactly as a rank started anew.
TEST_F(WorkerInProcessTest, AWarmForkedReplacementEndsBitIdenticalAfterAKill) {
  if (access(kFashionMnistTrain, R_OK) != 0) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  const std::string events = KillRankOneAndCompare(/*warm=*/true);
  EXPECT_EQ(LatestStartPath(events, 1), "warm") << events;
}

}  // namespace
}  // namespace dlaunch::worker
