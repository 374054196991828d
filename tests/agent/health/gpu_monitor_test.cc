#include "agent/health/gpu_monitor.h"

#include <unistd.h>

#include <cstdlib>
#include <map>
#include <string>

#include <gtest/gtest.h>

namespace dlaunch {
namespace {

// A fake NVML with two GPUs: index 0 (UUID GPU-aaaa) and index 1, whose memory query fails
// when `fail_memory_of_1` is set.
struct FakeNvml {
  static inline int inits = 0;
  static inline int shutdowns = 0;
  static inline bool init_fails = false;
  static inline bool fail_memory_of_1 = false;
  static inline int devices[2] = {0, 1};

  static int Init() { return init_fails ? 1 : (++inits, 0); }
  static int Shutdown() { return ++shutdowns, 0; }
  static int ByIndex(unsigned int i, NvmlApi::Device* d) {
    if (i > 1) return 2;  // NVML_ERROR_INVALID_ARGUMENT
    *d = &devices[i];
    return 0;
  }
  static int ByUuid(const char* uuid, NvmlApi::Device* d) {
    if (std::string(uuid) != "GPU-aaaa") return 6;  // NVML_ERROR_NOT_FOUND
    *d = &devices[0];
    return 0;
  }
  static int Utilization(NvmlApi::Device d, NvmlApi::Utilization* u) {
    u->gpu = *static_cast<int*>(d) == 0 ? 87 : 12;
    u->memory = 0;
    return 0;
  }
  static int Memory(NvmlApi::Device d, NvmlApi::Memory* m) {
    int i = *static_cast<int*>(d);
    if (i == 1 && fail_memory_of_1) return 15;  // NVML_ERROR_GPU_IS_LOST
    m->total = 40ull << 30;
    m->used = (i == 0 ? 10ull : 1ull) << 30;
    m->free = m->total - m->used;
    return 0;
  }
  // Device 0 tells its temperature and power; device 1 tells neither.
  static int Temperature(NvmlApi::Device d, int sensor, unsigned int* c) {
    if (*static_cast<int*>(d) != 0 || sensor != 0) return 3;  // NVML_ERROR_NOT_SUPPORTED
    *c = 61;
    return 0;
  }
  static int Power(NvmlApi::Device d, unsigned int* mw) {
    if (*static_cast<int*>(d) != 0) return 3;
    *mw = 412345;
    return 0;
  }
  // Device 0 tells its SM clock (1410 of at most 1980 MHz, held by its power cap); device 1
  // tells none of the three.
  static int Clock(NvmlApi::Device d, int type, unsigned int* mhz) {
    if (*static_cast<int*>(d) != 0 || type != 1) return 3;  // only NVML_CLOCK_SM is asked
    *mhz = 1410;
    return 0;
  }
  static int MaxClock(NvmlApi::Device d, int type, unsigned int* mhz) {
    if (*static_cast<int*>(d) != 0 || type != 1) return 3;
    *mhz = 1980;
    return 0;
  }
  static int ClockReasons(NvmlApi::Device d, unsigned long long* reasons) {
    if (*static_cast<int*>(d) != 0) return 3;
    *reasons = 0x4;  // nvmlClocksEventReasonSwPowerCap
    return 0;
  }
  static NvmlApi Api() {
    NvmlApi api;
    api.clock = Clock;
    api.max_clock = MaxClock;
    api.clock_reasons = ClockReasons;
    api.temperature = Temperature;
    api.power = Power;
    api.init = Init;
    api.shutdown = Shutdown;
    api.by_index = ByIndex;
    api.by_uuid = ByUuid;
    api.utilization = Utilization;
    api.memory = Memory;
    return api;
  }
};

class GpuMonitorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FakeNvml::inits = FakeNvml::shutdowns = 0;
    FakeNvml::init_fails = FakeNvml::fail_memory_of_1 = false;
  }
};

TEST_F(GpuMonitorTest, WithoutTheLibraryNothingIsRead) {
  auto monitor = GpuMonitor::Load({"0", "1"}, "libdlaunch-no-such-nvml.so.1");
  EXPECT_EQ(monitor->devices(), 0);
  EXPECT_NE(monitor->unavailable().find("libdlaunch-no-such-nvml.so.1"), std::string::npos)
      << monitor->unavailable();
  EXPECT_TRUE(monitor->Sample().empty());
  v1::Heartbeat hb;
  AddGpuSamples(monitor->Sample(), &hb);
  EXPECT_EQ(hb.gpus_size(), 0);
}

TEST_F(GpuMonitorTest, ALibraryWithoutNvmlIsNoGpu) {
  // A library that loads but has no NVML entry points (libc is always there).
  auto monitor = GpuMonitor::Load({"0"}, "libc.so.6");
  EXPECT_EQ(monitor->devices(), 0);
  EXPECT_NE(monitor->unavailable().find("entry point"), std::string::npos) << monitor->unavailable();
  EXPECT_TRUE(monitor->Sample().empty());
}

TEST_F(GpuMonitorTest, OpensIndicesAndUuidsAndSkipsWhatNvmlDoesNotKnow) {
  {
    GpuMonitor monitor(FakeNvml::Api(), {"GPU-aaaa", "1", "7", "MIG-1/2/3", "GPU-zzzz"});
    EXPECT_EQ(FakeNvml::inits, 1);
    EXPECT_EQ(monitor.devices(), 2);
    std::vector<GpuReading> r = monitor.Sample();
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0].device, "GPU-aaaa");
    EXPECT_EQ(r[0].utilization_pct, 87);
    EXPECT_EQ(r[0].memory_used_bytes, 10ull << 30);
    EXPECT_EQ(r[0].memory_total_bytes, 40ull << 30);
    EXPECT_EQ(r[1].device, "1");
    EXPECT_EQ(r[1].utilization_pct, 12);
  }
  EXPECT_EQ(FakeNvml::shutdowns, 1);
}

TEST_F(GpuMonitorTest, TemperatureAndPowerAreReadWhereNvmlTellsThem) {
  GpuMonitor monitor(FakeNvml::Api(), {"0", "1"});
  std::vector<GpuReading> r = monitor.Sample();
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].temperature_c, 61);
  EXPECT_DOUBLE_EQ(r[0].power_w.value_or(-1), 412.345);
  EXPECT_FALSE(r[1].temperature_c.has_value());
  EXPECT_FALSE(r[1].power_w.has_value());
  v1::Heartbeat hb;
  AddGpuSamples(r, &hb);
  ASSERT_EQ(hb.gpus_size(), 2);
  EXPECT_EQ(hb.gpus(0).temperature_c(), 61);
  EXPECT_DOUBLE_EQ(hb.gpus(0).power_w(), 412.345);
  EXPECT_FALSE(hb.gpus(1).has_temperature_c());
  EXPECT_FALSE(hb.gpus(1).has_power_w());
  // An NVML without the two entry points still gives utilisation and memory.
  NvmlApi bare = FakeNvml::Api();
  bare.temperature = nullptr;
  bare.power = nullptr;
  GpuMonitor older(bare, {"0"});
  ASSERT_EQ(older.Sample().size(), 1u);
  EXPECT_FALSE(older.Sample()[0].temperature_c.has_value());
}

TEST_F(GpuMonitorTest, TheSmClockAndWhyItIsHeldDownAreReadWhereNvmlTellsThem) {
  GpuMonitor monitor(FakeNvml::Api(), {"0", "1"});
  std::vector<GpuReading> r = monitor.Sample();
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].sm_clock_mhz.value_or(-1), 1410);
  EXPECT_EQ(r[0].sm_clock_max_mhz.value_or(-1), 1980);
  EXPECT_EQ(r[0].clock_event_reasons.value_or(0), 0x4u);
  EXPECT_FALSE(r[1].sm_clock_mhz.has_value());
  EXPECT_FALSE(r[1].sm_clock_max_mhz.has_value());
  EXPECT_FALSE(r[1].clock_event_reasons.has_value());
  v1::Heartbeat hb;
  AddGpuSamples(r, &hb);
  ASSERT_EQ(hb.gpus_size(), 2);
  EXPECT_EQ(hb.gpus(0).sm_clock_mhz(), 1410);
  EXPECT_EQ(hb.gpus(0).sm_clock_max_mhz(), 1980);
  EXPECT_EQ(hb.gpus(0).clock_event_reasons(), 0x4u);
  EXPECT_FALSE(hb.gpus(1).has_sm_clock_mhz());
  EXPECT_FALSE(hb.gpus(1).has_sm_clock_max_mhz());
  EXPECT_FALSE(hb.gpus(1).has_clock_event_reasons());
  // An NVML without the three entry points (or an older one) still gives the rest.
  NvmlApi bare = FakeNvml::Api();
  bare.clock = bare.max_clock = nullptr;
  bare.clock_reasons = nullptr;
  GpuMonitor older(bare, {"0"});
  ASSERT_EQ(older.Sample().size(), 1u);
  EXPECT_EQ(older.Sample()[0].utilization_pct, 87);
  EXPECT_FALSE(older.Sample()[0].sm_clock_mhz.has_value());
  EXPECT_FALSE(older.Sample()[0].clock_event_reasons.has_value());
}

TEST_F(GpuMonitorTest, AGpuThatDoesNotAnswerIsLeftOutOfThatSample) {
  GpuMonitor monitor(FakeNvml::Api(), {"0", "1"});
  FakeNvml::fail_memory_of_1 = true;
  std::vector<GpuReading> r = monitor.Sample();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].device, "0");
  FakeNvml::fail_memory_of_1 = false;
  EXPECT_EQ(monitor.Sample().size(), 2u);
}

TEST_F(GpuMonitorTest, FailedInitReadsNothingAndIsNotShutDown) {
  FakeNvml::init_fails = true;
  {
    GpuMonitor monitor(FakeNvml::Api(), {"0"});
    EXPECT_EQ(monitor.devices(), 0);
    EXPECT_TRUE(monitor.Sample().empty());
    EXPECT_EQ(monitor.unavailable(), "nvmlInit_v2 failed: error (1)");
  }
  EXPECT_EQ(FakeNvml::shutdowns, 0);
}

TEST_F(GpuMonitorTest, AWorkingNvmlIsNotUnavailable) {
  GpuMonitor monitor(FakeNvml::Api(), {"0"});
  EXPECT_EQ(monitor.unavailable(), "");
}

// NVIDIA's own NVML library (the driver's libnvidia-ml.so.1) on a machine without the driver's
// kernel module: it loads, has every entry point, and nvmlInit_v2 answers "Driver Not Loaded".
// That is the agent's "no GPU health" path on a CPU node with the user-space driver installed,
// taken for real. DLAUNCH_NVML_LIBRARY names it (scripts/test-torch2.sh fetches it with
// scripts/nvml-library.sh).
TEST_F(GpuMonitorTest, NvidiasNvmlWithoutTheDriverLoadsAndIsNoGpuHealth) {
  const char* library = std::getenv("DLAUNCH_NVML_LIBRARY");
  if (library == nullptr || access(library, R_OK) != 0) {
    GTEST_SKIP() << "DLAUNCH_NVML_LIBRARY names no NVML library (scripts/nvml-library.sh)";
  }
  if (access("/proc/driver/nvidia/version", F_OK) == 0) {
    GTEST_SKIP() << "this machine has the NVIDIA driver loaded";
  }
  auto monitor = GpuMonitor::Load({"0", "GPU-aaaa"}, library);
  EXPECT_EQ(monitor->devices(), 0);
  EXPECT_TRUE(monitor->Sample().empty());
  // Loaded and resolved: the failure is NVML's own answer, not a missing library or symbol.
  EXPECT_EQ(monitor->unavailable(), "nvmlInit_v2 failed: Driver Not Loaded (9)");
}

TEST_F(GpuMonitorTest, ReadingsGoIntoTheHeartbeatInMiB) {
  v1::Heartbeat hb;
  AddGpuSamples({{"0", 87, 10ull << 30, 40ull << 30, {}, {}, {}, {}, {}},
                 {"GPU-b", 3.5, (3ull << 20) + 5, 80ull << 30, {}, {}, {}, {}, {}}},
                &hb);
  ASSERT_EQ(hb.gpus_size(), 2);
  EXPECT_EQ(hb.gpus(0).device(), "0");
  EXPECT_EQ(hb.gpus(0).utilization_pct(), 87);
  EXPECT_EQ(hb.gpus(0).memory_used_mib(), 10 * 1024);
  EXPECT_EQ(hb.gpus(0).memory_total_mib(), 40 * 1024);
  EXPECT_EQ(hb.gpus(1).device(), "GPU-b");
  EXPECT_EQ(hb.gpus(1).memory_used_mib(), 3);  // whole MiB, rounded down
  EXPECT_EQ(hb.gpus(1).memory_total_mib(), 80 * 1024);
}

}  // namespace
}  // namespace dlaunch
