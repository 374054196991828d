#include "agent/workers/worker_env.h"

#include <cstdlib>
#include <set>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dlaunch {
namespace {

using ::testing::ElementsAre;

WorkerEnvInput Input() {
  WorkerEnvInput in;
  in.base_env = {{"PATH", "/usr/bin:/bin"}, {"HOME", "/home/u"}, {"CUDA_VISIBLE_DEVICES", "4,5,6,7"}};
  in.slot.local_rank = 2;
  in.slot.gpus = {"6"};
  in.slot.gpu_indices = {2};
  in.slot.cpus = {16, 17, 18};
  in.node_rank = 1;
  in.nnodes = 3;
  in.rank_offset = 4;
  in.local_world_size = 4;
  in.world_size = 10;
  in.master_addr = "10.0.0.1";
  in.master_port = 29500;
  in.restart_count = 1;
  in.max_restarts = 3;
  in.job_id = "job-42";
  in.job_dir = "/runs/job-42";
  in.report_socket = "/tmp/dlaunch-42/agent.sock";
  in.worker_server_socket = "/tmp/dlaunch-42-abc/rank-6.sock";
  return in;
}

TEST(WorkerEnvTest, EveryContractVariable) {
  EnvMap env = BuildWorkerEnv(Input());
  const EnvMap want = {
      {"RANK", "6"},
      {"LOCAL_RANK", "2"},
      {"WORLD_SIZE", "10"},
      {"LOCAL_WORLD_SIZE", "4"},
      {"GROUP_RANK", "1"},
      {"GROUP_WORLD_SIZE", "3"},
      {"ROLE_RANK", "6"},
      {"ROLE_NAME", "default"},
      {"ROLE_WORLD_SIZE", "10"},
      {"MASTER_ADDR", "10.0.0.1"},
      {"MASTER_PORT", "29500"},
      {"TORCHELASTIC_RESTART_COUNT", "1"},
      {"DLAUNCH_ROUND", "1"},
      {"TORCHELASTIC_MAX_RESTARTS", "3"},
      {"TORCHELASTIC_RUN_ID", "job-42"},
      {"TORCHELASTIC_ERROR_FILE", "/runs/job-42/errors/rank-6.json"},
      {"TORCHELASTIC_USE_AGENT_STORE", "False"},
      {"TORCHELASTIC_SIGNALS_TO_HANDLE", "SIGTERM,SIGINT,SIGHUP"},
      {"TORCH_WORKER_SERVER_SOCKET", "/tmp/dlaunch-42-abc/rank-6.sock"},
      {"OMP_NUM_THREADS", "1"},
      {"TORCH_NCCL_ASYNC_ERROR_HANDLING", "1"},
      {"PYTHONFAULTHANDLER", "1"},
      {"DLAUNCH_JOB_ID", "job-42"},
      {"DLAUNCH_JOB_DIR", "/runs/job-42"},
      {"DLAUNCH_REPORT_SOCKET", "/tmp/dlaunch-42/agent.sock"},
      {"DLAUNCH_GPU", "6"},
      {"DLAUNCH_CPUS", "16,17,18"},
      {"DLAUNCH_NODE_RANK", "1"},
      // Passed through untouched: not isolated, so LOCAL_RANK 2 indexes "4,5,6,7" -> 6.
      {"CUDA_VISIBLE_DEVICES", "4,5,6,7"},
      {"PATH", "/usr/bin:/bin"},
      {"HOME", "/home/u"},
  };
  EXPECT_EQ(env, want);
}

TEST(WorkerEnvTest, IsolationGivesTheRankOnlyItsOwnGpus) {
  WorkerEnvInput in = Input();
  in.isolate_gpus = true;
  in.slot.gpus = {"GPU-aaa", "GPU-bbb"};
  EnvMap env = BuildWorkerEnv(in);
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "GPU-aaa,GPU-bbb");
  EXPECT_EQ(env["DLAUNCH_GPU"], "GPU-aaa,GPU-bbb");
  EXPECT_EQ(env["LOCAL_RANK"], "2");
}

TEST(WorkerEnvTest, IsolationSetsVariableEvenWhenNodeHadNone) {
  WorkerEnvInput in = Input();
  in.base_env.erase("CUDA_VISIBLE_DEVICES");  // inventory came from NVML
  in.isolate_gpus = true;
  EXPECT_EQ(BuildWorkerEnv(in)["CUDA_VISIBLE_DEVICES"], "6");
  in.isolate_gpus = false;
  EXPECT_EQ(BuildWorkerEnv(in).count("CUDA_VISIBLE_DEVICES"), 0u);
}

TEST(WorkerEnvTest, RankWithoutGpusKeepsInheritedVisibility) {
  WorkerEnvInput in = Input();
  in.base_env["CUDA_VISIBLE_DEVICES"] = "";
  in.slot.gpus.clear();
  in.slot.gpu_indices.clear();
  in.slot.cpus.clear();
  in.isolate_gpus = true;
  EnvMap env = BuildWorkerEnv(in);
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "");
  EXPECT_EQ(env["DLAUNCH_GPU"], "");
  EXPECT_EQ(env["DLAUNCH_CPUS"], "");
}

TEST(WorkerEnvTest, SpecEnvOverridesBaseButNotTheContract) {
  WorkerEnvInput in = Input();
  in.base_env["FOO"] = "base";
  in.base_env["KEEP"] = "k";
  in.spec_env = {{"FOO", "spec"}, {"RANK", "99"}, {"MASTER_PORT", "1"}, {"NEW", "n"}};
  EnvMap env = BuildWorkerEnv(in);
  EXPECT_EQ(env["FOO"], "spec");
  EXPECT_EQ(env["KEEP"], "k");
  EXPECT_EQ(env["NEW"], "n");
  EXPECT_EQ(env["RANK"], "6");
  EXPECT_EQ(env["MASTER_PORT"], "29500");
}

TEST(WorkerEnvTest, InheritedContractVariablesAreReplaced) {
  // dlaunch started from inside another launcher's worker.
  WorkerEnvInput in = Input();
  in.base_env["RANK"] = "0";
  in.base_env["WORLD_SIZE"] = "1";
  in.base_env["TORCHELASTIC_USE_AGENT_STORE"] = "True";
  EnvMap env = BuildWorkerEnv(in);
  EXPECT_EQ(env["RANK"], "6");
  EXPECT_EQ(env["WORLD_SIZE"], "10");
  EXPECT_EQ(env["TORCHELASTIC_USE_AGENT_STORE"], "False");
}

TEST(WorkerEnvTest, TheWorkerServerSocketIsTheRanksOwnOrNone) {
  // One path for every rank (inherited, or from job.yaml) would fail all but one worker_main().
  WorkerEnvInput in = Input();
  in.base_env["TORCH_WORKER_SERVER_SOCKET"] = "/tmp/outer.sock";
  in.spec_env["TORCH_WORKER_SERVER_SOCKET"] = "/tmp/mine.sock";
  EXPECT_EQ(BuildWorkerEnv(in)["TORCH_WORKER_SERVER_SOCKET"], "/tmp/dlaunch-42-abc/rank-6.sock");
  in.worker_server_socket.clear();  // the agent could not make its socket directory
  EXPECT_EQ(BuildWorkerEnv(in).count("TORCH_WORKER_SERVER_SOCKET"), 0u);
}

TEST(WorkerEnvTest, TheAgentStoreIsAnnouncedAsTorchrunDoes) {
  WorkerEnvInput in = Input();
  in.agent_store = true;
  in.base_env["TORCHELASTIC_USE_AGENT_STORE"] = "False";  // an outer launcher's says nothing
  EnvMap env = BuildWorkerEnv(in);
  EXPECT_EQ(env["TORCHELASTIC_USE_AGENT_STORE"], "True");
  EXPECT_EQ(env["MASTER_PORT"], "29500");  // the agent's store, where rank 0's would be
}

TEST(WorkerEnvTest, ThreadAndNcclDefaultsYieldToBaseOrSpec) {
  WorkerEnvInput in = Input();
  in.base_env["OMP_NUM_THREADS"] = "8";
  in.spec_env["TORCH_NCCL_ASYNC_ERROR_HANDLING"] = "0";
  in.base_env["PYTHONFAULTHANDLER"] = "0";
  EnvMap env = BuildWorkerEnv(in);
  EXPECT_EQ(env["OMP_NUM_THREADS"], "8");
  EXPECT_EQ(env["TORCH_NCCL_ASYNC_ERROR_HANDLING"], "0");
  EXPECT_EQ(env["PYTHONFAULTHANDLER"], "0") << "a user's choice stands";

  in = Input();
  in.base_env["OMP_NUM_THREADS"] = "8";
  in.spec_env["OMP_NUM_THREADS"] = "2";
  EXPECT_EQ(BuildWorkerEnv(in)["OMP_NUM_THREADS"], "2");
}

TEST(WorkerEnvTest, OmpThreadsDefaultToTheRanksOwnCores) {
  WorkerEnvInput in = Input();
  in.slot.cpus = {8, 9, 10, 11, 40, 41, 42, 43};
  in.slot.cores = 4;
  EnvMap env = BuildWorkerEnv(in);
  EXPECT_EQ(env["OMP_NUM_THREADS"], "4");  // cores, not hardware threads
  EXPECT_EQ(env["DLAUNCH_CPUS"], "8,9,10,11,40,41,42,43");

  in.base_env["OMP_NUM_THREADS"] = "";  // empty counts as unset
  EXPECT_EQ(BuildWorkerEnv(in)["OMP_NUM_THREADS"], "4");
  in.spec_env["OMP_NUM_THREADS"] = "2";  // the user's choice wins
  EXPECT_EQ(BuildWorkerEnv(in)["OMP_NUM_THREADS"], "2");
}

TEST(WorkerEnvTest, OmpThreadsAreOneOnSharedCores) {
  WorkerEnvInput in = Input();
  in.slot.cpus = {0};
  in.slot.cores = 1;
  in.slot.shares_cores = true;
  EXPECT_EQ(BuildWorkerEnv(in)["OMP_NUM_THREADS"], "1");
  in.slot.cpus = {0, 1};
  in.slot.cores = 2;
  in.slot.shares_cores = true;
  EXPECT_EQ(BuildWorkerEnv(in)["OMP_NUM_THREADS"], "1");
}

TEST(WorkerEnvTest, RanksAcrossANode) {
  WorkerEnvInput in = Input();
  std::set<std::string> ranks, files;
  for (int lr = 0; lr < in.local_world_size; ++lr) {
    in.slot.local_rank = lr;
    EnvMap env = BuildWorkerEnv(in);
    ranks.insert(env["RANK"]);
    files.insert(env["TORCHELASTIC_ERROR_FILE"]);
    EXPECT_EQ(env["LOCAL_RANK"], std::to_string(lr));
    EXPECT_EQ(env["ROLE_RANK"], env["RANK"]);
  }
  EXPECT_EQ(ranks, (std::set<std::string>{"4", "5", "6", "7"}));
  EXPECT_EQ(files.size(), 4u);
}

TEST(WorkerEnvTest, ToEnvpIsKeyEqualsValueSorted) {
  EnvMap env = {{"B", "2"}, {"A", "x=y"}, {"EMPTY", ""}};
  EXPECT_THAT(ToEnvp(env), ElementsAre("A=x=y", "B=2", "EMPTY="));
}

TEST(WorkerEnvTest, ProcessEnvReadsEnviron) {
  setenv("DLAUNCH_TEST_WORKER_ENV", "a=b", 1);
  EnvMap env = ProcessEnv();
  EXPECT_EQ(env["DLAUNCH_TEST_WORKER_ENV"], "a=b");
  unsetenv("DLAUNCH_TEST_WORKER_ENV");
  EXPECT_EQ(ProcessEnv().count("DLAUNCH_TEST_WORKER_ENV"), 0u);
}

}  // namespace
}  // namespace dlaunch
