// PlaceRanks on the XML nodes: a Polaris node, a ThetaGPU DGX A100 and this build machine.
#include "agent/placement/cpu_placement.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dlaunch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::vector<int> Range(int begin, int end) {
  std::vector<int> v;
  for (int i = begin; i < end; ++i) v.push_back(i);
  return v;
}

// Cores [begin, end) of a node with ncores cores and two threads per core, as CPU ids.
std::vector<int> CoreThreads(int begin, int end, int ncores) {
  std::vector<int> v = Range(begin, end);
  for (int c = begin; c < end; ++c) v.push_back(c + ncores);
  std::sort(v.begin(), v.end());
  return v;
}

NodeTopology Load(const std::string& name) {
  auto t = LoadTopologyXml(std::string(DLAUNCH_SOURCE_DIR) + "/tests/agent/topologies/" + name);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *t : NodeTopology{};
}

std::vector<int> GpuNuma(const NodeTopology& t) {
  std::vector<int> numa;
  for (const auto& g : t.gpus) numa.push_back(g.numa);
  return numa;
}

// The properties every computed plan has: non-empty, disjoint, whole allowed cores, each rank
// in one domain (its GPU's when it has one); returns the CPUs used, ascending.
std::vector<int> CheckPlan(const NodeTopology& t, const std::vector<int>& allowed,
                           const PlacementRequest& req, const std::vector<RankPlacement>& plan) {
  std::map<int, const TopologyCore*> core_of;
  for (const auto& c : t.cores) {
    for (int pu : c.pus) core_of[pu] = &c;
  }
  std::set<int> used;
  for (size_t r = 0; r < plan.size(); ++r) {
    SCOPED_TRACE("local rank " + std::to_string(r));
    const RankPlacement& p = plan[r];
    EXPECT_FALSE(p.cpus.empty());
    EXPECT_FALSE(p.shared);
    std::set<const TopologyCore*> cores;
    for (int cpu : p.cpus) {
      EXPECT_TRUE(used.insert(cpu).second) << "CPU " << cpu << " in two ranks";
      EXPECT_TRUE(std::binary_search(allowed.begin(), allowed.end(), cpu)) << cpu;
      if (core_of.count(cpu)) {
        cores.insert(core_of[cpu]);
      } else {
        ADD_FAILURE() << "CPU " << cpu << " is on no core";
      }
    }
    EXPECT_EQ(p.cores, static_cast<int>(cores.size()));
    for (const TopologyCore* c : cores) {
      for (int pu : c->pus) {
        if (std::binary_search(allowed.begin(), allowed.end(), pu)) {
          EXPECT_TRUE(std::binary_search(p.cpus.begin(), p.cpus.end(), pu)) << "half core " << pu;
        }
      }
      if (!p.gpu_indices.empty()) {
        EXPECT_EQ(c->numa, req.gpu_numa[p.gpu_indices[0]]);
      }
    }
  }
  return {used.begin(), used.end()};
}

TEST(CpuPlacementTest, PolarisRankFollowsItsGpuIntoTheReversedDomain) {
  NodeTopology t = Load("polaris.xml");
  PlacementRequest req;
  req.host = "x3005c0s7b0n0";
  req.nproc = 4;
  req.gpu_numa = GpuNuma(t);
  auto plan = PlaceRanks(t, t.allowed_cpus, req);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(CheckPlan(t, t.allowed_cpus, req, *plan), t.allowed_cpus);  // covers the node
  // LOCAL_RANK indexes the GPU list, so rank 0 keeps GPU 0 and takes cores of NUMA 3.
  EXPECT_THAT((*plan)[0].gpu_indices, ElementsAre(0));
  EXPECT_EQ((*plan)[0].cpus, CoreThreads(24, 32, 32));
  EXPECT_EQ((*plan)[0].numa, 3);
  EXPECT_EQ((*plan)[0].cores, 8);
  EXPECT_EQ((*plan)[3].cpus, CoreThreads(0, 8, 32));
}

TEST(CpuPlacementTest, PolarisIsolatedRanksTakeGpusNearestFirst) {
  NodeTopology t = Load("polaris.xml");
  PlacementRequest req;
  req.nproc = 4;
  req.gpu_numa = GpuNuma(t);
  req.gpus_by_locality = true;
  auto plan = PlaceRanks(t, t.allowed_cpus, req);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(CheckPlan(t, t.allowed_cpus, req, *plan), t.allowed_cpus);
  // ALCF's pairing: local rank r with GPU 3-r, on NUMA domain r.
  for (int r = 0; r < 4; ++r) {
    EXPECT_THAT((*plan)[r].gpu_indices, ElementsAre(3 - r));
    EXPECT_EQ((*plan)[r].numa, r);
    EXPECT_EQ((*plan)[r].cpus, CoreThreads(8 * r, 8 * r + 8, 32));
  }
}

TEST(CpuPlacementTest, PolarisTwoRanksPerGpuSplitTheDomain) {
  NodeTopology t = Load("polaris.xml");
  PlacementRequest req;
  req.nproc = 8;
  req.gpu_numa = GpuNuma(t);
  auto plan = PlaceRanks(t, t.allowed_cpus, req);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(CheckPlan(t, t.allowed_cpus, req, *plan), t.allowed_cpus);
  // Ranks 0 and 4 share GPU 0 (round-robin) and split NUMA 3's eight cores.
  EXPECT_EQ((*plan)[0].cpus, CoreThreads(24, 28, 32));
  EXPECT_EQ((*plan)[4].cpus, CoreThreads(28, 32, 32));
}

TEST(CpuPlacementTest, PolarisWithoutGpusSpreadsOverDomains) {
  NodeTopology t = Load("polaris.xml");
  PlacementRequest req;
  req.nproc = 2;
  auto plan = PlaceRanks(t, t.allowed_cpus, req);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(CheckPlan(t, t.allowed_cpus, req, *plan), t.allowed_cpus);
  EXPECT_EQ((*plan)[0].cpus, CoreThreads(0, 16, 32));  // NUMA 0 and 1
  EXPECT_EQ((*plan)[0].numa, -1);
  EXPECT_EQ((*plan)[1].cpus, CoreThreads(16, 32, 32));
}

TEST(CpuPlacementTest, UnknownGpuLocalitySpreadsLikeNoGpus) {
  NodeTopology t = Load("polaris.xml");
  PlacementRequest req;
  req.nproc = 4;
  req.gpu_numa = {3, -1, 1, 0};
  auto plan = PlaceRanks(t, t.allowed_cpus, req);
  ASSERT_TRUE(plan.ok()) << plan.status();
  for (int r = 0; r < 4; ++r) {
    EXPECT_THAT((*plan)[r].gpu_indices, ElementsAre(r));
    EXPECT_EQ((*plan)[r].numa, r);
  }
}

TEST(CpuPlacementTest, DgxA100RanksPairUpInTheirGpusDomains) {
  NodeTopology t = Load("dgx-a100.xml");
  PlacementRequest req;
  req.nproc = 8;
  req.gpu_numa = GpuNuma(t);
  auto plan = PlaceRanks(t, t.allowed_cpus, req);
  ASSERT_TRUE(plan.ok()) << plan.status();
  std::vector<int> used = CheckPlan(t, t.allowed_cpus, req, *plan);
  // Every core of the four GPU domains (1, 3, 5, 7); the other four hold no GPU and stay free.
  std::vector<int> gpu_domains;
  for (int d : {1, 3, 5, 7}) {
    for (int cpu : CoreThreads(16 * d, 16 * d + 16, 128)) gpu_domains.push_back(cpu);
  }
  std::sort(gpu_domains.begin(), gpu_domains.end());
  EXPECT_EQ(used, gpu_domains);
  // GPU0 and GPU1 share NUMA 3 (cores 48-63): eight cores each, sixteen threads.
  EXPECT_EQ((*plan)[0].cpus, CoreThreads(48, 56, 128));
  EXPECT_EQ((*plan)[1].cpus, CoreThreads(56, 64, 128));
  EXPECT_EQ((*plan)[1].cores, 8);
  EXPECT_EQ((*plan)[4].numa, 7);
}

TEST(CpuPlacementTest, DgxA100IsolatedRanksTakeGpusInDomainOrder) {
  NodeTopology t = Load("dgx-a100.xml");
  PlacementRequest req;
  req.nproc = 8;
  req.gpu_numa = GpuNuma(t);
  req.gpus_by_locality = true;
  auto plan = PlaceRanks(t, t.allowed_cpus, req);
  ASSERT_TRUE(plan.ok()) << plan.status();
  CheckPlan(t, t.allowed_cpus, req, *plan);
  std::vector<int> gpu, numa;
  for (const auto& p : *plan) {
    gpu.push_back(p.gpu_indices.at(0));
    numa.push_back(p.numa);
  }
  EXPECT_THAT(gpu, ElementsAre(2, 3, 0, 1, 6, 7, 4, 5));
  EXPECT_THAT(numa, ElementsAre(1, 1, 3, 3, 5, 5, 7, 7));
}

TEST(CpuPlacementTest, DgxA100WithoutGpusGivesEachRankADomain) {
  NodeTopology t = Load("dgx-a100.xml");
  PlacementRequest req;
  req.nproc = 8;
  auto plan = PlaceRanks(t, t.allowed_cpus, req);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(CheckPlan(t, t.allowed_cpus, req, *plan), t.allowed_cpus);
  for (int r = 0; r < 8; ++r) {
    EXPECT_EQ((*plan)[r].numa, r);
    EXPECT_EQ((*plan)[r].cores, 16);
  }
}

TEST(CpuPlacementTest, UnevenRanksOverDomainsStayBalanced) {
  NodeTopology t = Load("dgx-a100.xml");
  PlacementRequest req;
  req.nproc = 12;
  auto plan = PlaceRanks(t, t.allowed_cpus, req);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(CheckPlan(t, t.allowed_cpus, req, *plan), t.allowed_cpus);
  std::set<int> sizes;
  for (const auto& p : *plan) sizes.insert(p.cores);
  EXPECT_THAT(sizes, ElementsAre(8, 16));  // domains 0-3 hold two ranks, 4-7 one
}

TEST(CpuPlacementTest, AllocationCpusetLimitsThePlan) {
  // The cgroup grants cores 4-11 of a Polaris node (both threads): NUMA 0 and 1 only.
  NodeTopology t = Load("polaris.xml");
  std::vector<int> allowed = CoreThreads(4, 12, 32);
  PlacementRequest req;
  req.nproc = 2;
  auto plan = PlaceRanks(t, allowed, req);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(CheckPlan(t, allowed, req, *plan), allowed);
  EXPECT_EQ((*plan)[0].cpus, CoreThreads(4, 8, 32));
  EXPECT_EQ((*plan)[1].cpus, CoreThreads(8, 12, 32));
}

TEST(CpuPlacementTest, OneThreadOfACoreIsAllTheRankGetsOfIt) {
  // A cpuset with only the first thread of each core: ranks get those threads, whole cores count.
  NodeTopology t = Load("polaris.xml");
  std::vector<int> allowed = Range(0, 32);
  PlacementRequest req;
  req.nproc = 4;
  req.gpu_numa = GpuNuma(t);
  auto plan = PlaceRanks(t, allowed, req);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(CheckPlan(t, allowed, req, *plan), allowed);
  EXPECT_EQ((*plan)[0].cpus, Range(24, 32));
  EXPECT_EQ((*plan)[0].cores, 8);
}

TEST(CpuPlacementTest, MoreRanksThanCoresShareAndSaySo) {
  NodeTopology t = Load("build-vm.xml");
  PlacementRequest req;
  req.nproc = 5;
  auto plan = PlaceRanks(t, t.allowed_cpus, req);
  ASSERT_TRUE(plan.ok()) << plan.status();
  std::vector<int> cpu;
  for (const auto& p : *plan) {
    EXPECT_TRUE(p.shared);
    EXPECT_EQ(p.cores, 1);
    cpu.push_back(p.cpus.at(0));
  }
  EXPECT_THAT(cpu, ElementsAre(0, 1, 0, 1, 0));
}

TEST(CpuPlacementTest, BuildMachineGivesEachOfTwoRanksACore) {
  NodeTopology t = Load("build-vm.xml");
  PlacementRequest req;
  req.nproc = 2;
  auto plan = PlaceRanks(t, t.allowed_cpus, req);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(CheckPlan(t, t.allowed_cpus, req, *plan), Range(0, 2));
  EXPECT_THAT((*plan)[0].cpus, ElementsAre(0));
  EXPECT_THAT((*plan)[1].cpus, ElementsAre(1));
}

TEST(CpuPlacementTest, ThisNodeGivesEveryRankItsOwnCores) {
  auto t = LoadThisNodeTopology();
  ASSERT_TRUE(t.ok()) << t.status();
  PlacementRequest req;
  req.nproc = static_cast<int>(std::min<size_t>(t->cores.size(), 4));
  auto plan = PlaceRanks(*t, t->allowed_cpus, req);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(CheckPlan(*t, t->allowed_cpus, req, *plan), t->allowed_cpus);
}

TEST(CpuPlacementTest, BindingNoneKeepsGpusAndPinsNothing) {
  NodeTopology t = Load("polaris.xml");
  PlacementRequest req;
  req.nproc = 4;
  req.gpu_numa = GpuNuma(t);
  req.binding = CpuBinding::kNone;
  req.explicit_map = {{{0}, 9}};  // ignored, GPU included: binding is off
  auto plan = PlaceRanks(t, t.allowed_cpus, req);
  ASSERT_TRUE(plan.ok()) << plan.status();
  for (int r = 0; r < 4; ++r) {
    EXPECT_THAT((*plan)[r].gpu_indices, ElementsAre(r));
    EXPECT_THAT((*plan)[r].cpus, IsEmpty());
    EXPECT_EQ((*plan)[r].cores, 0);
  }
}

TEST(CpuPlacementTest, ExplicitMapIsTakenAsGiven) {
  NodeTopology t = Load("polaris.xml");
  PlacementRequest req;
  req.nproc = 2;
  req.gpu_numa = GpuNuma(t);
  req.explicit_map = {{{32, 0, 1}, 3}, {{8, 9}, -1}, {{16}, 2}};  // a third entry is unused
  auto plan = PlaceRanks(t, t.allowed_cpus, req);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT((*plan)[0].cpus, ElementsAre(0, 1, 32));
  EXPECT_EQ((*plan)[0].cores, 2);
  EXPECT_EQ((*plan)[0].numa, 0);
  EXPECT_THAT((*plan)[0].gpu_indices, ElementsAre(3));
  EXPECT_THAT((*plan)[1].gpu_indices, ElementsAre(1));
}

TEST(CpuPlacementTest, ExplicitMapNamingAMissingCpuIsRefusedWithWhatTheNodeHas) {
  NodeTopology t = Load("polaris.xml");
  PlacementRequest req;
  req.host = "x3005c0s7b0n0";
  req.nproc = 2;
  req.explicit_map = {{{0, 1}, -1}, {{64}, -1}};
  auto plan = PlaceRanks(t, t.allowed_cpus, req);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(plan.status().message()),
              HasSubstr("node x3005c0s7b0n0: the explicit CPU map names CPU 64 (local rank 1), "
                        "which this node does not have; it has CPUs 0-63"));
}

TEST(CpuPlacementTest, ExplicitMapOutsideTheAllocationIsRefused) {
  NodeTopology t = Load("polaris.xml");
  PlacementRequest req;
  req.host = "n1";
  req.nproc = 1;
  req.explicit_map = {{{40}, -1}};
  auto plan = PlaceRanks(t, Range(0, 32), req);
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(std::string(plan.status().message()),
              HasSubstr("CPU 40 (local rank 0), which this allocation does not grant; it has CPUs "
                        "0-63, of which this allocation grants 0-31"));
}

TEST(CpuPlacementTest, OverlappingExplicitMapIsRefused) {
  NodeTopology t = Load("polaris.xml");
  PlacementRequest req;
  req.host = "n1";
  req.nproc = 2;
  req.explicit_map = {{{0, 1, 2}, -1}, {{2, 3}, -1}};
  auto plan = PlaceRanks(t, t.allowed_cpus, req);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(plan.status().message()),
              HasSubstr("node n1: the explicit CPU map gives CPU 2 to local ranks 0 and 1"));
}

TEST(CpuPlacementTest, ShortOrEmptyExplicitMapIsRefused) {
  NodeTopology t = Load("polaris.xml");
  PlacementRequest req;
  req.host = "n1";
  req.nproc = 4;
  req.explicit_map = {{{0}, -1}, {{1}, -1}};
  auto plan = PlaceRanks(t, t.allowed_cpus, req);
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(std::string(plan.status().message()),
              HasSubstr("node n1: the explicit CPU map has 2 entries for 4 local ranks"));
  req.nproc = 2;
  req.explicit_map = {{{0}, -1}, {{}, -1}};
  plan = PlaceRanks(t, t.allowed_cpus, req);
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr("gives local rank 1 no CPUs"));
}

TEST(CpuPlacementTest, ExplicitMapNamingAMissingGpuIsRefused) {
  NodeTopology t = Load("polaris.xml");
  PlacementRequest req;
  req.host = "n1";
  req.nproc = 1;
  req.gpu_numa = GpuNuma(t);
  req.explicit_map = {{{0}, 4}};
  auto plan = PlaceRanks(t, t.allowed_cpus, req);
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(std::string(plan.status().message()),
              HasSubstr("gives local rank 0 GPU 4 but this node sees 4 GPUs"));
}

TEST(CpuPlacementTest, TooFewGpusAndBadCountsAreRefused) {
  NodeTopology t = Load("polaris.xml");
  PlacementRequest req;
  req.host = "n1";
  req.nproc = 3;
  req.gpus_per_proc = 2;
  req.gpu_numa = GpuNuma(t);
  auto plan = PlaceRanks(t, t.allowed_cpus, req);
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr("needs 6 GPUs but this node sees 4"));
  req.nproc = 0;
  EXPECT_EQ(PlaceRanks(t, t.allowed_cpus, req).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(CpuPlacementTest, CpuRangesCompactsRuns) {
  EXPECT_EQ(CpuRanges({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10,11");
  EXPECT_EQ(CpuRanges({}), "");
}

}  // namespace
}  // namespace dlaunch
