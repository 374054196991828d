// BuildStartRequests and PlacementRequestFor (pure), MakeJobDirs and WritePlacementFile.
#include "agent/workers/worker_launch.h"

#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/test_files.h"

namespace dlaunch {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::Not;

v1::JoinResponse Job() {
  v1::JoinResponse job;
  job.set_job_id("job-7");
  job.set_job_dir("/jobs/job-7");
  job.set_round(1);
  job.set_node_rank(1);
  job.set_nnodes(2);
  job.set_rank_offset(2);
  job.set_local_world_size(2);
  job.set_world_size(4);
  job.set_master_addr("10.0.0.1");
  job.set_master_port(29500);
  job.set_max_restarts(3);
  job.mutable_worker()->add_argv("python");
  job.mutable_worker()->add_argv("train.py");
  job.mutable_worker()->set_workdir("/project/train");
  (*job.mutable_worker()->mutable_env())["LR"] = "0.1";
  return job;
}

std::vector<RankSlot> Plan() {
  RankSlot a, b;
  a.local_rank = 0;
  a.gpus = {"0"};
  a.gpu_indices = {0};
  a.cpus = {0, 1};
  b.local_rank = 1;
  b.gpus = {"1"};
  b.gpu_indices = {1};
  b.cpus = {2, 3};
  return {a, b};
}

TEST(BuildStartRequestsTest, OneRequestPerSlotWithGlobalRanksArgvAndWorkdir) {
  auto requests = BuildStartRequests(Job(), Plan(), {{"PATH", "/bin"}}, "/tmp/r.sock");
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].rank, 2);
  EXPECT_EQ(requests[0].local_rank, 0);
  EXPECT_EQ(requests[1].rank, 3);
  EXPECT_EQ(requests[1].local_rank, 1);
  for (const auto& r : requests) {
    EXPECT_THAT(r.options.argv, ElementsAre("python", "train.py"));
    EXPECT_EQ(r.options.workdir, "/project/train");
  }
}

TEST(BuildStartRequestsTest, EachWorkerIsPinnedToItsSlotsCpus) {
  std::vector<RankSlot> plan = Plan();
  plan[1].cpus.clear();  // binding off: the worker inherits the agent's CPUs
  auto requests = BuildStartRequests(Job(), plan, {}, "/tmp/r.sock");
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_THAT(requests[0].options.cpu_affinity, ElementsAre(0, 1));
  EXPECT_TRUE(requests[1].options.cpu_affinity.empty());
}

TEST(UnplacedSlotsTest, OneEmptySlotPerLocalRank) {
  std::vector<RankSlot> slots = UnplacedSlots(Job());
  ASSERT_EQ(slots.size(), 2u);
  EXPECT_EQ(slots[1].local_rank, 1);
  EXPECT_TRUE(slots[1].cpus.empty());
  EXPECT_TRUE(slots[1].gpus.empty());
}

TEST(PlacementRequestForTest, CarriesTheWorkerTemplatesPlacementSettings) {
  v1::JoinResponse job = Job();
  job.mutable_worker()->set_gpus_per_proc(1);
  job.mutable_worker()->set_isolate_gpus(true);
  v1::RankCpus* entry = job.mutable_worker()->add_cpu_map();
  entry->add_cpus(4);
  entry->add_cpus(5);
  entry->set_gpu(2);
  PlacementRequest req = PlacementRequestFor(job, "x1");
  EXPECT_EQ(req.host, "x1");
  EXPECT_EQ(req.nproc, 2);
  EXPECT_EQ(req.gpus_per_proc, 1);
  EXPECT_TRUE(req.gpus_by_locality);
  EXPECT_EQ(req.binding, CpuBinding::kCores);
  ASSERT_EQ(req.explicit_map.size(), 1u);
  EXPECT_THAT(req.explicit_map[0].cpus, ElementsAre(4, 5));
  EXPECT_EQ(req.explicit_map[0].gpu, 2);

  job.mutable_worker()->set_cpu_binding_none(true);
  EXPECT_EQ(PlacementRequestFor(job, "x1").binding, CpuBinding::kNone);
}

TEST(WritePlacementFileTest, KeepsTheNoteAndOneLinePerRankUnderPlacement) {
  ScratchDir scratch;
  v1::JoinResponse job = Job();
  job.set_job_dir(scratch.path());
  const std::string text = PlacementText(job, Plan(), "placement in CPUs 0-3");
  EXPECT_EQ(text,
            "placement in CPUs 0-3\n"
            "rank 2 local_rank 0: gpus 0 (index 0), cpus 0,1\n"
            "rank 3 local_rank 1: gpus 1 (index 1), cpus 2,3\n");
  ASSERT_TRUE(WritePlacementFile(job, text).ok());
  EXPECT_EQ(ReadFile(scratch.path() + "/placement/node-1.txt"), text);
}

TEST(BuildStartRequestsTest, TheEnvironmentCarriesTheContractTheSpecAndTheBase) {
  auto requests = BuildStartRequests(Job(), Plan(), {{"PATH", "/bin"}, {"LR", "9"}}, "/tmp/r.sock");
  ASSERT_EQ(requests.size(), 2u);
  const auto& env = requests[1].options.envp;
  EXPECT_THAT(env, Contains("RANK=3"));
  EXPECT_THAT(env, Contains("LOCAL_RANK=1"));
  EXPECT_THAT(env, Contains("WORLD_SIZE=4"));
  EXPECT_THAT(env, Contains("GROUP_RANK=1"));
  EXPECT_THAT(env, Contains("MASTER_ADDR=10.0.0.1"));
  EXPECT_THAT(env, Contains("MASTER_PORT=29500"));
  EXPECT_THAT(env, Contains("TORCHELASTIC_RESTART_COUNT=1"));
  EXPECT_THAT(env, Contains("DLAUNCH_REPORT_SOCKET=/tmp/r.sock"));
  EXPECT_THAT(env, Contains("PATH=/bin"));
  EXPECT_THAT(env, Contains("LR=0.1"));  // the spec's env wins over the agent's
  EXPECT_THAT(env, Not(Contains("LR=9")));
}

TEST(BuildStartRequestsTest, EachRoundsPlaceSetsItsRoundRanksAndMasterPort) {
  // The place of round 4 after restarts: this node moved to node rank 0, a new MASTER_PORT.
  v1::JoinResponse place = Job();
  place.set_round(4);
  place.set_node_rank(0);
  place.set_rank_offset(0);
  place.set_master_port(41234);
  (*place.mutable_worker()->mutable_env())["DLAUNCH_ROUND"] = "99";  // the spec cannot set it
  auto requests = BuildStartRequests(place, Plan(), {{"TORCHELASTIC_RESTART_COUNT", "7"}}, "s");
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[1].rank, 1);
  const auto& env = requests[1].options.envp;
  EXPECT_THAT(env, Contains("TORCHELASTIC_RESTART_COUNT=4"));
  EXPECT_THAT(env, Contains("DLAUNCH_ROUND=4"));
  EXPECT_THAT(env, Contains("TORCHELASTIC_MAX_RESTARTS=3"));
  EXPECT_THAT(env, Contains("MASTER_PORT=41234"));
  EXPECT_THAT(env, Contains("RANK=1"));
  EXPECT_THAT(env, Contains("GROUP_RANK=0"));
  EXPECT_THAT(env, Contains("DLAUNCH_NODE_RANK=0"));
  EXPECT_THAT(env, Not(Contains("DLAUNCH_ROUND=99")));
}

TEST(BuildStartRequestsTest, EachRankGetsItsOwnWorkerSocketAndAStaleOneIsRemoved) {
  ScratchDir sockets;
  const std::string stale = sockets.path() + "/rank-3.sock";
  std::ofstream(stale) << "left by rank 3 of the round before";
  auto requests = BuildStartRequests(Job(), Plan(), {}, "/tmp/r.sock", sockets.path());
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_THAT(requests[0].options.envp,
              Contains("TORCH_WORKER_SERVER_SOCKET=" + sockets.path() + "/rank-2.sock"));
  EXPECT_THAT(requests[1].options.envp, Contains("TORCH_WORKER_SERVER_SOCKET=" + stale));
  struct stat st;
  EXPECT_NE(stat(stale.c_str(), &st), 0) << "torch's worker server refuses a path that exists";

  // Without a socket directory no rank gets the variable.
  for (const auto& r : BuildStartRequests(Job(), Plan(), {}, "/tmp/r.sock")) {
    for (const std::string& kv : r.options.envp) {
      EXPECT_NE(kv.rfind("TORCH_WORKER_SERVER_SOCKET=", 0), 0u) << kv;
    }
  }
}

TEST(BuildStartRequestsTest, TorchrunsLocalRankMacroIsSubstitutedPerRank) {
  v1::JoinResponse job = Job();
  job.mutable_worker()->add_argv("--local_rank=${local_rank}");
  job.mutable_worker()->add_argv("--out=r${local_rank}/${local_rank}.txt");
  job.mutable_worker()->add_argv("$local_rank ${rank} $${local_rank_x}");
  auto requests = BuildStartRequests(job, Plan(), {}, "/tmp/r.sock");
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_THAT(requests[1].options.argv,
              ElementsAre("python", "train.py", "--local_rank=1", "--out=r1/1.txt",
                          "$local_rank ${rank} $${local_rank_x}"));
  EXPECT_EQ(requests[0].options.argv[2], "--local_rank=0");
}

TEST(BuildStartRequestsTest, AnEmptyPlanStartsNothing) {
  EXPECT_TRUE(BuildStartRequests(Job(), {}, {}, "/tmp/r.sock").empty());
}

TEST(WorkerLogLimitTest, BytesOrASuffixFromTheEnvironmentElseTheDefault) {
  EXPECT_EQ(WorkerLogLimit({}), ChildSupervisor::kDefaultLogLimit);
  EXPECT_EQ(WorkerLogLimit({{"DLAUNCH_WORKER_LOG_LIMIT", "1000"}}), 1000);
  EXPECT_EQ(WorkerLogLimit({{"DLAUNCH_WORKER_LOG_LIMIT", "64k"}}), 64 << 10);
  EXPECT_EQ(WorkerLogLimit({{"DLAUNCH_WORKER_LOG_LIMIT", " 512M"}}), int64_t{512} << 20);
  EXPECT_EQ(WorkerLogLimit({{"DLAUNCH_WORKER_LOG_LIMIT", "10G"}}), int64_t{10} << 30);
  EXPECT_EQ(WorkerLogLimit({{"DLAUNCH_WORKER_LOG_LIMIT", "0"}}), 0);
  for (const char* bad : {"", "M", "-1", "1.5G", "lots", "99999999999999999999"}) {
    EXPECT_EQ(WorkerLogLimit({{"DLAUNCH_WORKER_LOG_LIMIT", bad}}), ChildSupervisor::kDefaultLogLimit)
        << bad;
  }
}

TEST(MakeJobDirsTest, CreatesTheJobDirWithLogsAndErrorsAndAcceptsExistingOnes) {
  ScratchDir scratch;
  std::string job_dir = scratch.path() + "/job";
  ASSERT_TRUE(MakeJobDirs(job_dir).ok());
  struct stat st;
  EXPECT_EQ(stat((job_dir + "/logs").c_str(), &st), 0);
  EXPECT_EQ(stat((job_dir + "/errors").c_str(), &st), 0);
  EXPECT_TRUE(MakeJobDirs(job_dir).ok());
}

TEST(MakeJobDirsTest, AMissingParentIsNotFoundAndNamed) {
  absl::Status st = MakeJobDirs("/nonexistent/dlaunch-test/job");
  EXPECT_EQ(st.code(), absl::StatusCode::kNotFound) << st;
  EXPECT_NE(st.message().find("/nonexistent/dlaunch-test/job"), std::string::npos) << st;
}

}  // namespace
}  // namespace dlaunch
