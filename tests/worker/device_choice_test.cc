#include "worker/device_choice.h"

#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dlaunch::worker {
namespace {

using ::testing::HasSubstr;

CudaProbe Gpus(int count) { return CudaProbe{true, "2.11.0", count, ""}; }

DeviceRequest Request(std::string flag, int local_rank) {
  DeviceRequest r;
  r.flag = std::move(flag);
  r.local_rank = local_rank;
  r.host = "x3004c0s7b0n0";
  return r;
}

TEST(DeviceChoiceTest, LocalRankIndexesTheVisibleDevicesAsUnderTorchrun) {
  DeviceRequest r = Request("auto", 3);
  r.cuda_visible_devices = "0,1,2,3";
  absl::StatusOr<DeviceChoice> c = ChooseDevice(r, Gpus(4));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->kind, DeviceKind::kCuda);
  EXPECT_EQ(c->index, 3);
  EXPECT_THAT(c->described, HasSubstr("LOCAL_RANK 3"));
}

TEST(DeviceChoiceTest, ThePlannedGpuIsFoundInsideASubsetOfTheNodesDevices) {
  // The node exposes GPUs 4-7; the agent planned physical GPU 6 for local rank 0.
  DeviceRequest r = Request("cuda", 0);
  r.cuda_visible_devices = "4,5,6,7";
  r.planned_gpus = "6";
  absl::StatusOr<DeviceChoice> c = ChooseDevice(r, Gpus(4));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->index, 2);
}

TEST(DeviceChoiceTest, AnIsolatedRankUsesItsOnlyVisibleDeviceWhateverItsLocalRank) {
  // gpus.binding: isolate narrows CUDA_VISIBLE_DEVICES to the rank's own GPU.
  DeviceRequest r = Request("cuda", 3);
  r.cuda_visible_devices = "3";
  r.planned_gpus = "3";
  absl::StatusOr<DeviceChoice> c = ChooseDevice(r, Gpus(1));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->index, 0);
}

TEST(DeviceChoiceTest, RanksSharingGpusRoundRobinGetTheirPlannedDevice) {
  // 4 ranks on 2 GPUs: the agent planned GPU 1 for local rank 3 (3 % 2).
  DeviceRequest r = Request("auto", 3);
  r.planned_gpus = "1";
  absl::StatusOr<DeviceChoice> c = ChooseDevice(r, Gpus(2));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->index, 1);
}

TEST(DeviceChoiceTest, ALocalRankPastTheVisibleDevicesIsNamed) {
  DeviceRequest r = Request("auto", 2);
  r.cuda_visible_devices = "0,1";
  absl::StatusOr<DeviceChoice> c = ChooseDevice(r, Gpus(2));
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(c.status()));
  EXPECT_THAT(c.status().message(), HasSubstr("node x3004c0s7b0n0"));
  EXPECT_THAT(c.status().message(), HasSubstr("LOCAL_RANK 2 asks for CUDA device 2"));
  EXPECT_THAT(c.status().message(), HasSubstr("only 2 are visible (CUDA_VISIBLE_DEVICES=0,1)"));
}

TEST(DeviceChoiceTest, AutoFallsBackToTheCpuWithoutDevices) {
  absl::StatusOr<DeviceChoice> c = ChooseDevice(Request("auto", 1), Gpus(0));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->kind, DeviceKind::kCpu);
  c = ChooseDevice(Request("auto", 0), CudaProbe{false, "1.13.1", 0, ""});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->kind, DeviceKind::kCpu);
}

TEST(DeviceChoiceTest, CpuIsHonouredEvenWithGpus) {
  absl::StatusOr<DeviceChoice> c = ChooseDevice(Request("cpu", 0), Gpus(4));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->kind, DeviceKind::kCpu);
}

TEST(DeviceChoiceTest, CudaWithoutADriverNamesTheNodeAndTheRuntimesCause) {
  CudaProbe probe{true, "2.11.0", 0, "CUDA driver version is insufficient for CUDA runtime version"};
  absl::StatusOr<DeviceChoice> c = ChooseDevice(Request("cuda", 0), probe);
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(c.status()));
  EXPECT_EQ(c.status().message(),
            "node x3004c0s7b0n0: --device cuda, but the CUDA runtime finds no GPU: CUDA driver "
            "version is insufficient for CUDA runtime version");
}

TEST(DeviceChoiceTest, CudaWithEveryGpuHiddenSaysSo) {
  for (const char* hidden : {"", "-1", "NoDevFiles"}) {
    DeviceRequest r = Request("cuda", 0);
    r.cuda_visible_devices = hidden;
    absl::StatusOr<DeviceChoice> c = ChooseDevice(r, Gpus(0));
    ASSERT_FALSE(c.ok()) << hidden;
    EXPECT_THAT(c.status().message(), HasSubstr("hides every GPU")) << hidden;
  }
}

TEST(DeviceChoiceTest, CudaOnACpuOnlyBuildNamesTheBuild) {
  absl::StatusOr<DeviceChoice> c = ChooseDevice(Request("cuda", 0), CudaProbe{false, "1.13.1", 0, ""});
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("built on LibTorch 1.13.1 without CUDA"));
}

TEST(DeviceChoiceTest, AnUnknownFlagIsInvalid) {
  absl::StatusOr<DeviceChoice> c = ChooseDevice(Request("tpu", 0), Gpus(1));
  EXPECT_TRUE(absl::IsInvalidArgument(c.status()));
}

TEST(DeviceChoiceTest, TheRequestIsReadFromTheEnvironment) {
  DeviceRequest r = DeviceRequestFromEnv(
      MapEnvironment({{"CUDA_VISIBLE_DEVICES", "2,3"}, {"DLAUNCH_GPU", "3"}}), "cuda", 1);
  EXPECT_EQ(r.flag, "cuda");
  EXPECT_EQ(r.local_rank, 1);
  ASSERT_TRUE(r.cuda_visible_devices.has_value());
  EXPECT_EQ(*r.cuda_visible_devices, "2,3");
  EXPECT_EQ(r.planned_gpus, "3");
  EXPECT_FALSE(r.host.empty());
  EXPECT_FALSE(DeviceRequestFromEnv(MapEnvironment({}), "auto", 0).cuda_visible_devices);
}

}  // namespace
}  // namespace dlaunch::worker
