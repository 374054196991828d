#include "worker/distributed_env.h"

#include <map>
#include <string>

#include "gtest/gtest.h"

namespace dlaunch::worker {
namespace {

absl::StatusOr<DistributedEnv> Read(const std::map<std::string, std::string>& vars) {
  return ReadDistributedEnv(MapEnvironment(vars));
}

TEST(DistributedEnvTest, AloneWithoutEnvironment) {
  absl::StatusOr<DistributedEnv> env = Read({});
  ASSERT_TRUE(env.ok());
  EXPECT_EQ(env->rank, 0);
  EXPECT_EQ(env->world_size, 1);
  EXPECT_EQ(env->master_port, 0);
  EXPECT_TRUE(env->report_socket.empty());
}

TEST(DistributedEnvTest, ReadsTheRestartCount) {
  EXPECT_EQ(Read({})->restart_count, 0);
  EXPECT_EQ(Read({{"TORCHELASTIC_RESTART_COUNT", "2"}})->restart_count, 2);
  absl::StatusOr<DistributedEnv> bad = Read({{"TORCHELASTIC_RESTART_COUNT", "-1"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("TORCHELASTIC_RESTART_COUNT"), std::string::npos);
}

TEST(DistributedEnvTest, ReadsTorchrunVariables) {
  absl::StatusOr<DistributedEnv> env =
      Read({{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "1"}, {"MASTER_ADDR", "10.0.0.2"},
            {"MASTER_PORT", "29500"}, {"OMP_NUM_THREADS", "2"},
            {"DLAUNCH_REPORT_SOCKET", "/run/r.sock"}});
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_EQ(env->rank, 3);
  EXPECT_EQ(env->world_size, 4);
  EXPECT_EQ(env->local_rank, 1);
  EXPECT_EQ(env->master_addr, "10.0.0.2");
  EXPECT_EQ(env->master_port, 29500);
  EXPECT_EQ(env->omp_num_threads, 2);
  EXPECT_EQ(env->report_socket, "/run/r.sock");
  EXPECT_FALSE(env->use_agent_store);
}

TEST(DistributedEnvTest, TorchrunAgentStore) {
  absl::StatusOr<DistributedEnv> env = Read({{"TORCHELASTIC_USE_AGENT_STORE", "True"}});
  ASSERT_TRUE(env.ok());
  EXPECT_TRUE(env->use_agent_store);
  EXPECT_FALSE(Read({{"TORCHELASTIC_USE_AGENT_STORE", "False"}})->use_agent_store);
}

TEST(DistributedEnvTest, RejectsInconsistentValuesByName) {
  absl::StatusOr<DistributedEnv> env = Read({{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "1"}});
  EXPECT_TRUE(absl::IsInvalidArgument(env.status()));
  env = Read({{"RANK", "x"}});
  ASSERT_FALSE(env.ok());
  EXPECT_NE(env.status().message().find("RANK"), absl::string_view::npos);
  env = Read({{"WORLD_SIZE", "2"}, {"RANK", "0"}});
  ASSERT_FALSE(env.ok());
  EXPECT_NE(env.status().message().find("MASTER_PORT"), absl::string_view::npos);
  EXPECT_FALSE(Read({{"MASTER_PORT", "70000"}}).ok());
}

}  // namespace
}  // namespace dlaunch::worker
