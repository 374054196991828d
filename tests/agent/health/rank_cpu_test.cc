#include "agent/health/rank_cpu.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"

namespace dlaunch {
namespace {

TEST(RankCpuTest, SumsTheRunAndDelayOfEveryThread) {
  const std::string proc = ::testing::TempDir() + "/rank_cpu_proc";
  std::filesystem::remove_all(proc);
  for (const auto& [tid, line] : std::vector<std::pair<std::string, std::string>>{
           {"41", "2500000000 500000000 120\n"}, {"43", "500000000 1500000000 80\n"}}) {
    std::filesystem::create_directories(proc + "/41/task/" + tid);
    std::ofstream(proc + "/41/task/" + tid + "/schedstat") << line;
  }
  std::optional<v1::RankCpu> cpu = ReadRankCpu(41, proc);
  ASSERT_TRUE(cpu.has_value());
  EXPECT_DOUBLE_EQ(cpu->cpu_s(), 3.0);
  EXPECT_DOUBLE_EQ(cpu->run_delay_s(), 2.0);
  EXPECT_FALSE(ReadRankCpu(42, proc).has_value());  // gone
  v1::RankCpu bad;
  EXPECT_FALSE(AddSchedstat("garbage", &bad));
}

TEST(RankCpuTest, ThisProcesssOwnCountersGrowWithItsWork) {
  std::optional<v1::RankCpu> before = ReadRankCpu(getpid());
  if (!before) GTEST_SKIP() << "no /proc/PID/task/*/schedstat on this kernel";
  const auto start = std::chrono::steady_clock::now();
  volatile double x = 0;
  while (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(50)) x = x + 1;
  std::optional<v1::RankCpu> after = ReadRankCpu(getpid());
  ASSERT_TRUE(after.has_value());
  EXPECT_GT(after->cpu_s() - before->cpu_s(), 0.01);
}

}  // namespace
}  // namespace dlaunch
