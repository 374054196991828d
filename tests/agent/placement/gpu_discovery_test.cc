#include "agent/placement/gpu_discovery.h"

#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dlaunch {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

EnvLookup Env(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

GpuCountFn Nvml(std::optional<int> n, int* calls = nullptr) {
  return [n, calls]() {
    if (calls != nullptr) ++*calls;
    return n;
  };
}

TEST(GpuDiscoveryTest, CudaVisibleDevicesWinsOverNvml) {
  int calls = 0;
  GpuInventory inv = DiscoverGpus(Env({{"CUDA_VISIBLE_DEVICES", "2,3"}}), Nvml(8, &calls));
  EXPECT_EQ(inv.source, "CUDA_VISIBLE_DEVICES");
  EXPECT_THAT(inv.visible, ElementsAre("2", "3"));
  EXPECT_EQ(inv.count(), 2);
  EXPECT_EQ(calls, 0);
}

TEST(GpuDiscoveryTest, UuidsAndWhitespaceAreKeptAsWritten) {
  GpuInventory inv = DiscoverGpus(
      Env({{"CUDA_VISIBLE_DEVICES", " GPU-8f2a1c3e-aaaa, MIG-1b2c3d4e/1/0 ,3"}}), Nvml(4));
  EXPECT_THAT(inv.visible, ElementsAre("GPU-8f2a1c3e-aaaa", "MIG-1b2c3d4e/1/0", "3"));
}

TEST(GpuDiscoveryTest, EmptyMinusOneAndNoDevFilesMeanNoGpus) {
  for (const char* v : {"", "  ", "-1", "NoDevFiles"}) {
    GpuInventory inv = DiscoverGpus(Env({{"CUDA_VISIBLE_DEVICES", v}}), Nvml(4));
    EXPECT_THAT(inv.visible, IsEmpty()) << "CUDA_VISIBLE_DEVICES='" << v << "'";
    EXPECT_EQ(inv.source, "CUDA_VISIBLE_DEVICES") << v;
  }
}

TEST(GpuDiscoveryTest, ListEndsAtFirstInvalidEntryAsCudaDoes) {
  EXPECT_THAT(ParseCudaVisibleDevices("0,1,-1,2"), ElementsAre("0", "1"));
  EXPECT_THAT(ParseCudaVisibleDevices("0,,2"), ElementsAre("0"));
  EXPECT_THAT(ParseCudaVisibleDevices("5"), ElementsAre("5"));
}

TEST(GpuDiscoveryTest, NvmlCountWhenVariableUnset) {
  GpuInventory inv = DiscoverGpus(Env({}), Nvml(4));
  EXPECT_EQ(inv.source, "nvml");
  EXPECT_THAT(inv.visible, ElementsAre("0", "1", "2", "3"));
}

TEST(GpuDiscoveryTest, NoneWhenNvmlAbsentOrReportsZero) {
  for (std::optional<int> n : {std::optional<int>(), std::optional<int>(0)}) {
    GpuInventory inv = DiscoverGpus(Env({{"PATH", "/bin"}}), Nvml(n));
    EXPECT_EQ(inv.source, "none");
    EXPECT_THAT(inv.visible, IsEmpty());
  }
}

TEST(GpuDiscoveryTest, RealNvmlProbeDoesNotCrash) {
  // Where libnvidia-ml is missing (CPU CI) this is nullopt; on a GPU node a count >= 0.
  std::optional<int> n = NvmlDeviceCount();
  if (n) {
    EXPECT_GE(*n, 0);
  }
  GpuInventory inv = DiscoverGpus(Env({}));
  EXPECT_TRUE(inv.source == "nvml" || inv.source == "none") << inv.source;
  EXPECT_EQ(inv.source == "nvml", n.has_value() && *n > 0);
}

}  // namespace
}  // namespace dlaunch
