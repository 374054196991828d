// Reading topologies with hwloc: the XML test nodes, this machine, and the CPU scope rules.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "agent/placement/local_rank_plan.h"
#include "agent/placement/node_topology.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dlaunch {
namespace {

using ::testing::ElementsAre;

std::string TopologyFile(const std::string& name) {
  return std::string(DLAUNCH_SOURCE_DIR) + "/tests/agent/topologies/" + name;
}

std::vector<int> AllPus(const NodeTopology& t) {
  std::vector<int> pus;
  for (const auto& c : t.cores) pus.insert(pus.end(), c.pus.begin(), c.pus.end());
  std::sort(pus.begin(), pus.end());
  return pus;
}

TEST(PlacementTopologyTest, PolarisHasFourDomainsOfEightTwoThreadCores) {
  auto t = LoadTopologyXml(TopologyFile("polaris.xml"));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->cores.size(), 32u);
  EXPECT_THAT(t->numa_os_index, ElementsAre(0, 1, 2, 3));
  EXPECT_EQ(AllPus(*t).size(), 64u);
  EXPECT_EQ(t->allowed_cpus, AllPus(*t));
  // Linux numbering: core 9 (NUMA 1) has threads 9 and 41.
  EXPECT_EQ(t->cores[9].numa, 1);
  EXPECT_THAT(t->cores[9].pus, ElementsAre(9, 41));
  // GPU0..3 in PCI order sit under NUMA 3..0.
  ASSERT_EQ(t->gpus.size(), 4u);
  std::vector<int> numa;
  for (const auto& g : t->gpus) numa.push_back(g.numa);
  EXPECT_THAT(numa, ElementsAre(3, 2, 1, 0));
  EXPECT_EQ(t->gpus[0].bus_id, "0000:07:00.0");
}

TEST(PlacementTopologyTest, DgxA100HasEightDomainsAndTwoGpusOnEachOddOne) {
  auto t = LoadTopologyXml(TopologyFile("dgx-a100.xml"));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->cores.size(), 128u);
  EXPECT_EQ(t->numa_os_index.size(), 8u);
  EXPECT_EQ(AllPus(*t).size(), 256u);
  EXPECT_THAT(t->cores[127].pus, ElementsAre(127, 255));
  EXPECT_EQ(t->cores[127].numa, 7);
  std::vector<int> numa;
  for (const auto& g : t->gpus) numa.push_back(g.numa);
  EXPECT_THAT(numa, ElementsAre(3, 3, 1, 1, 7, 7, 5, 5));
}

TEST(PlacementTopologyTest, BuildMachineExportLoads) {
  auto t = LoadTopologyXml(TopologyFile("build-vm.xml"));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->cores.size(), 2u);
  EXPECT_THAT(t->numa_os_index, ElementsAre(0));
  EXPECT_TRUE(t->gpus.empty());  // a disk and a NIC, no display controller
}

TEST(PlacementTopologyTest, ThisNodeCoversTheAgentsAffinity) {
  auto t = LoadThisNodeTopology();
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_FALSE(t->cores.empty());
  const std::vector<int> pus = AllPus(*t);
  for (int cpu : AllowedCpus()) {
    EXPECT_TRUE(std::binary_search(pus.begin(), pus.end(), cpu)) << cpu;
    EXPECT_TRUE(std::binary_search(t->allowed_cpus.begin(), t->allowed_cpus.end(), cpu)) << cpu;
  }
}

TEST(PlacementTopologyTest, MissingXmlIsAnError) {
  auto t = LoadTopologyXml(TopologyFile("no-such-node.xml"));
  EXPECT_FALSE(t.ok());
  EXPECT_THAT(std::string(t.status().message()), ::testing::HasSubstr("no-such-node.xml"));
}

TEST(PlacementTopologyTest, PciBusIdsMatchInEitherSpelling) {
  EXPECT_EQ(NormalizePciBusId("00000000:C7:00.0"), "0000:c7:00.0");
  EXPECT_EQ(NormalizePciBusId("0000:07:00.0"), "0000:07:00.0");
  EXPECT_EQ(NormalizePciBusId("GPU-1234"), std::nullopt);
  EXPECT_EQ(NormalizePciBusId("0000:07:00.0x"), std::nullopt);
  auto t = LoadTopologyXml(TopologyFile("polaris.xml"));
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(GpuNumaDomain(*t, "00000000:C7:00.0"), 0);
  EXPECT_EQ(GpuNumaDomain(*t, "00000000:08:00.0"), std::nullopt);
}

TEST(PlacementTopologyTest, GpuDomainsFollowTheVisibleEntries) {
  auto t = LoadTopologyXml(TopologyFile("polaris.xml"));
  ASSERT_TRUE(t.ok());
  GpuInventory gpus;
  gpus.visible = {"2", "0", "GPU-unknown"};
  const std::map<std::string, std::string> bus = {{"0", "00000000:07:00.0"},
                                                  {"2", "00000000:85:00.0"}};
  auto lookup = [&](const std::string& e) -> std::optional<std::string> {
    auto it = bus.find(e);
    if (it == bus.end()) return std::nullopt;
    return it->second;
  };
  EXPECT_THAT(GpuNumaDomains(*t, gpus, lookup), ElementsAre(1, 3, -1));
  EXPECT_THAT(GpuNumaDomains(*t, gpus, nullptr), ElementsAre(-1, -1, -1));
}

TEST(PlacementTopologyTest, OwnAffinityNarrowsTheAllocation) {
  // taskset -c 2,3 inside a 0-7 cpuset: plan in 2,3.
  EXPECT_THAT(PlanningCpus({0, 1, 2, 3, 4, 5, 6, 7}, {2, 3}, false), ElementsAre(2, 3));
  // Unknown affinity: the allocation.
  EXPECT_THAT(PlanningCpus({0, 1}, {}, false), ElementsAre(0, 1));
}

TEST(PlacementTopologyTest, ALaunchersOneCoreBindingIsWidenedToTheAllocation) {
  // mpirun left the agent on core 0 of a 0-7 cpuset.
  EXPECT_THAT(PlanningCpus({0, 1, 2, 3, 4, 5, 6, 7}, {0}, true),
              ElementsAre(0, 1, 2, 3, 4, 5, 6, 7));
}

TEST(PlacementTopologyTest, AffinityOutsideTheKnownAllocationIsTrusted) {
  EXPECT_THAT(PlanningCpus({0, 1}, {4, 5}, false), ElementsAre(4, 5));
}

TEST(PlacementTopologyTest, MpiLaunchersAreRecognisedByTheirVariables) {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PALS_RANKID",
                          "SLURM_STEP_ID"}) {
    EXPECT_TRUE(StartedAsMpiRank([&](const std::string& n) -> std::optional<std::string> {
      if (n == var) return "1";
      return std::nullopt;
    })) << var;
  }
  EXPECT_FALSE(StartedAsMpiRank([](const std::string&) { return std::nullopt; }));
}

}  // namespace
}  // namespace dlaunch
