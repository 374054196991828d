#include "agent/placement/local_rank_plan.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <set>

#include "gmock/gmock.h"
#include "absl/strings/str_join.h"
#include "common/environment.h"
#include "gtest/gtest.h"

namespace dlaunch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

GpuInventory Gpus(std::vector<std::string> v, std::string source = "CUDA_VISIBLE_DEVICES") {
  GpuInventory g;
  g.source = v.empty() ? "none" : source;
  g.visible = std::move(v);
  return g;
}

std::vector<int> Range(int begin, int end) {
  std::vector<int> v(end - begin);
  std::iota(v.begin(), v.end(), begin);
  return v;
}

TEST(LocalRankPlanTest, OneGpuPerRankAndEqualCpuShares) {
  auto plan = PlanLocalRanks(4, Gpus({"0", "1", "2", "3"}), Range(0, 32), 0);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->size(), 4u);
  for (int r = 0; r < 4; ++r) {
    const RankSlot& s = (*plan)[r];
    EXPECT_EQ(s.local_rank, r);
    EXPECT_THAT(s.gpu_indices, ElementsAre(r));
    EXPECT_THAT(s.gpus, ElementsAre(std::to_string(r)));
    EXPECT_EQ(s.cpus, Range(8 * r, 8 * r + 8));
  }
}

TEST(LocalRankPlanTest, MoreRanksThanGpusShareRoundRobin) {
  auto plan = PlanLocalRanks(5, Gpus({"0", "1"}), Range(0, 10), 0);
  ASSERT_TRUE(plan.ok());
  std::vector<int> idx;
  for (const auto& s : *plan) idx.push_back(s.gpu_indices.at(0));
  EXPECT_THAT(idx, ElementsAre(0, 1, 0, 1, 0));
  EXPECT_THAT((*plan)[4].gpus, ElementsAre("0"));
  EXPECT_THAT((*plan)[4].cpus, ElementsAre(8, 9));
}

TEST(LocalRankPlanTest, SeveralGpusPerRank) {
  auto plan = PlanLocalRanks(2, Gpus({"0", "1", "2", "3"}), Range(0, 4), 2);
  ASSERT_TRUE(plan.ok());
  EXPECT_THAT((*plan)[0].gpu_indices, ElementsAre(0, 1));
  EXPECT_THAT((*plan)[1].gpu_indices, ElementsAre(2, 3));
  EXPECT_THAT((*plan)[1].gpus, ElementsAre("2", "3"));
}

TEST(LocalRankPlanTest, SubsetCudaVisibleDevicesMapsIndicesToEntries) {
  // The node shows GPUs 4..7 only; LOCAL_RANK indexes the visible list, so rank 1 is
  // index 1, which is physical GPU 6 here.
  auto plan = PlanLocalRanks(2, Gpus({"4", "6"}), Range(0, 8), 1);
  ASSERT_TRUE(plan.ok());
  EXPECT_THAT((*plan)[1].gpu_indices, ElementsAre(1));
  EXPECT_THAT((*plan)[1].gpus, ElementsAre("6"));
}

TEST(LocalRankPlanTest, UuidEntriesAreCarried) {
  auto plan = PlanLocalRanks(1, Gpus({"GPU-aaa", "GPU-bbb"}), {}, 2);
  ASSERT_TRUE(plan.ok());
  EXPECT_THAT((*plan)[0].gpus, ElementsAre("GPU-aaa", "GPU-bbb"));
  EXPECT_THAT((*plan)[0].cpus, IsEmpty());
}

TEST(LocalRankPlanTest, FewerGpusThanRequestedIsAnErrorNamingTheCounts) {
  auto plan = PlanLocalRanks(4, Gpus({"0", "1", "2"}), Range(0, 8), 1);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(plan.status().message()),
              HasSubstr("gpus_per_proc=1 x nproc_per_node=4 needs 4 GPUs but this node sees 3"));
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr("0,1,2"));
}

TEST(LocalRankPlanTest, GpusRequestedOnCpuNodeIsAnError) {
  GpuInventory none;
  none.source = "none";
  auto plan = PlanLocalRanks(1, none, Range(0, 2), 1);
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr("sees 0 (from none)"));
}

TEST(LocalRankPlanTest, CpuOnlyNodeGetsNoGpus) {
  GpuInventory none;
  none.source = "none";
  auto plan = PlanLocalRanks(3, none, Range(0, 7), 0);
  ASSERT_TRUE(plan.ok());
  for (const auto& s : *plan) {
    EXPECT_THAT(s.gpus, IsEmpty());
    EXPECT_THAT(s.gpu_indices, IsEmpty());
  }
  // 7 cores over 3 ranks: 3, 2, 2, contiguous.
  EXPECT_THAT((*plan)[0].cpus, ElementsAre(0, 1, 2));
  EXPECT_THAT((*plan)[1].cpus, ElementsAre(3, 4));
  EXPECT_THAT((*plan)[2].cpus, ElementsAre(5, 6));
}

TEST(LocalRankPlanTest, CpuSharesFollowTheAllowedSetNotIds) {
  // An affinity mask with holes (cgroup cpuset 2,3,8,9).
  auto plan = PlanLocalRanks(2, Gpus({}), {2, 3, 8, 9}, 0);
  ASSERT_TRUE(plan.ok());
  EXPECT_THAT((*plan)[0].cpus, ElementsAre(2, 3));
  EXPECT_THAT((*plan)[1].cpus, ElementsAre(8, 9));
}

TEST(LocalRankPlanTest, FewerCoresThanRanksShareRoundRobin) {
  auto plan = PlanLocalRanks(5, Gpus({}), {0, 1}, 0);
  ASSERT_TRUE(plan.ok());
  std::vector<int> got;
  for (const auto& s : *plan) {
    ASSERT_EQ(s.cpus.size(), 1u);
    got.push_back(s.cpus[0]);
  }
  EXPECT_THAT(got, ElementsAre(0, 1, 0, 1, 0));
}

TEST(LocalRankPlanTest, EveryAllowedCoreIsUsedExactlyOnce) {
  for (int ncpu = 1; ncpu <= 17; ++ncpu) {
    for (int nproc = 1; nproc <= ncpu; ++nproc) {
      auto plan = PlanLocalRanks(nproc, Gpus({}), Range(100, 100 + ncpu), 0);
      ASSERT_TRUE(plan.ok());
      std::vector<int> all;
      size_t mn = SIZE_MAX, mx = 0;
      for (const auto& s : *plan) {
        all.insert(all.end(), s.cpus.begin(), s.cpus.end());
        mn = std::min(mn, s.cpus.size());
        mx = std::max(mx, s.cpus.size());
      }
      EXPECT_EQ(all, Range(100, 100 + ncpu)) << ncpu << " cores, " << nproc << " ranks";
      EXPECT_LE(mx - mn, 1u);
    }
  }
}

TEST(LocalRankPlanTest, BadArgumentsAreInvalid) {
  EXPECT_EQ(PlanLocalRanks(0, Gpus({"0"}), {0}, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(PlanLocalRanks(1, Gpus({"0"}), {0}, -1).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(LocalRankPlanTest, DefaultProcsPerNodeIsGpuCountElseOne) {
  EXPECT_EQ(DefaultProcsPerNode(Gpus({"0", "1", "2", "3"})), 4);
  EXPECT_EQ(DefaultProcsPerNode(Gpus({"7"})), 1);
  EXPECT_EQ(DefaultProcsPerNode(GpuInventory{}), 1);
}

TEST(LocalRankPlanTest, AllowedCpusMatchesSchedGetaffinity) {
  std::vector<int> cpus = AllowedCpus();
  ASSERT_FALSE(cpus.empty());
  EXPECT_TRUE(std::is_sorted(cpus.begin(), cpus.end()));
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  EXPECT_EQ(static_cast<int>(cpus.size()), CPU_COUNT(&set));
  for (int c : cpus) EXPECT_TRUE(CPU_ISSET(c, &set)) << c;
}

TEST(LocalRankPlanTest, TopologyPlanNamesGpusAndKernelNumaNodes) {
  auto topo = LoadTopologyXml(std::string(DLAUNCH_SOURCE_DIR) + "/tests/agent/topologies/polaris.xml");
  ASSERT_TRUE(topo.ok()) << topo.status();
  topo->numa_os_index = {4, 5, 6, 7};  // the kernel's numbers need not be the positions
  PlacementRequest req;
  req.nproc = 4;
  req.gpu_numa = {3, 2, 1, 0};
  req.gpus_by_locality = true;
  auto plan = PlanLocalRanks(*topo, topo->allowed_cpus,
                             Gpus({"GPU-a", "GPU-b", "GPU-c", "GPU-d"}), req);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT((*plan)[0].gpus, ElementsAre("GPU-d"));
  EXPECT_THAT((*plan)[0].gpu_indices, ElementsAre(3));
  EXPECT_EQ((*plan)[0].numa_node, 4);
  EXPECT_EQ((*plan)[0].cores, 8);
  EXPECT_EQ(DescribeRankSlot((*plan)[0]),
            "local_rank 0: gpus GPU-d (index 3), cpus 0-7,32-39 (8 cores, NUMA 4)");
}

TEST(LocalRankPlanTest, TopologyPlanKeepsTheGpuCountMessage) {
  PlacementRequest req;
  req.nproc = 2;
  req.gpus_per_proc = 1;
  auto plan = PlanLocalRanks(FlatTopology({0, 1}), {0, 1}, Gpus({"3"}), req);
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(std::string(plan.status().message()),
              HasSubstr("needs 2 GPUs but this node sees 1 (from CUDA_VISIBLE_DEVICES: 3)"));
}

TEST(LocalRankPlanTest, ThisNodePlanStaysInTheAllowedCpus) {
  std::string note;
  PlacementRequest req;
  req.nproc = 2;
  auto plan = PlanThisNode(GpuInventory{{}, "none"}, req, &note);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(note, HasSubstr("placement in CPUs"));
  auto topo = LoadThisNodeTopology();
  ASSERT_TRUE(topo.ok()) << topo.status();
  // Within the allocation always; within this process's affinity unless an MPI launcher bound it.
  const std::vector<int> bound = StartedAsMpiRank(ProcessEnvironment()) ? topo->allowed_cpus : AllowedCpus();
  for (const auto& s : *plan) {
    EXPECT_FALSE(s.cpus.empty());
    for (int c : s.cpus) {
      EXPECT_TRUE(std::binary_search(topo->allowed_cpus.begin(), topo->allowed_cpus.end(), c)) << c;
      EXPECT_TRUE(std::binary_search(bound.begin(), bound.end(), c)) << c;
    }
  }
}

TEST(LocalRankPlanTest, SharedCoresAreNamedInTheLog) {
  auto plan = PlanLocalRanks(3, Gpus({}), {5}, 0);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(DescribeRankSlot((*plan)[2]),
            "local_rank 2: gpus none, cpus 5 (1 core, shared with other ranks)");
}

TEST(LocalRankPlanTest, DescribeAndJoin) {
  RankSlot s;
  s.local_rank = 1;
  s.gpus = {"6"};
  s.gpu_indices = {1};
  s.cpus = {8, 9, 10, 11, 20, 22, 23};
  EXPECT_EQ(DescribeRankSlot(s), "local_rank 1: gpus 6 (index 1), cpus 8-11,20,22,23");
  EXPECT_EQ(absl::StrJoin(s.cpus, ","), "8,9,10,11,20,22,23");
  RankSlot empty;
  EXPECT_EQ(DescribeRankSlot(empty), "local_rank 0: gpus none, cpus any");
}

}  // namespace
}  // namespace dlaunch
