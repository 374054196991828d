// The straggler score on GPU nodes, for scripts without reports or whose reports give only wall
// time: the "gpu clock", each rank's GPU's SM clock while busy against its local rank's median,
// beside the CPU stretch.
#include <functional>
#include <optional>

#include "gtest/gtest.h"
#include "launcher/job/straggler_score.h"
#include "tests/launcher/job/straggler_testing.h"

namespace dlaunch {
namespace {

StragglerSettings Settings() {
  StragglerSettings s;
  s.threshold = 1.25;
  s.persist = 3;
  s.interval_s = 5;
  return s;
}

using straggler_testing::Steps;

// Scripts without reports on GPU nodes: three nodes of two ranks (node = rank / 2), one GPU per
// rank but where said. An interval of 5 s holds five heartbeats of GPU samples and one of CPU
// counters (each rank runs 2 s and waits 1 s for a CPU, but rank `starved`, 18 s).
class GpuClockTest : public ::testing::Test {
 protected:
  using Gpus = std::function<std::vector<RankGpuSample>(int rank, int beat)>;
  static RankGpuSample Gpu(double mhz, double util = 95,
                           std::optional<uint64_t> reasons = std::nullopt) {
    RankGpuSample g;
    g.sm_clock_mhz = mhz;
    g.sm_clock_max_mhz = 1980;
    g.utilization_pct = util;
    g.clock_event_reasons = reasons;
    return g;
  }
  // Every GPU busy at its most clock but rank `slow`'s, at `slow_mhz` (held by `reasons`).
  static Gpus OneSlow(int slow, double slow_mhz, std::optional<uint64_t> reasons = std::nullopt) {
    return [=](int r, int) {
      return std::vector<RankGpuSample>{r == slow ? Gpu(slow_mhz, 95, reasons) : Gpu(1980, 95, 0)};
    };
  }
  std::vector<StragglerChange> Interval(const Gpus& gpus, int starved = -1) {
    for (int beat = 0; beat < 5; ++beat) {
      now_ += 1;
      for (int r = 0; r < 6; ++r) score_.OnGpuSample(r, r / 2, gpus(r, beat), now_);
    }
    for (int r = 0; r < 6; ++r) {
      cpu_[r] += 2;
      delay_[r] += r == starved ? 18 : 1;
      score_.OnCpuSample(r, r / 2, cpu_[r], delay_[r], now_);
    }
    return score_.Evaluate(now_);
  }

  StragglerScore score_{Settings()};
  double now_ = 0;
  double cpu_[6] = {}, delay_[6] = {};
};

TEST_F(GpuClockTest, ARankWhoseGpuRunsAtSevenTenthsOfItsPeersClockIsNamedByIt) {
  score_.StartRound(0);
  const Gpus hot = OneSlow(3, 0.7 * 1980, 0x48);  // HW thermal and HW slowdown
  EXPECT_TRUE(Interval(hot).empty());
  EXPECT_TRUE(Interval(hot).empty());
  std::vector<StragglerChange> c = Interval(hot);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_TRUE(c[0].detected);
  EXPECT_EQ(c[0].node, 1);
  EXPECT_EQ(c[0].rank, 3);
  EXPECT_TRUE(c[0].gpu_clock);
  EXPECT_FALSE(c[0].cpu_stretch);
  EXPECT_FALSE(c[0].own_work);
  // Nanoseconds per cycle: its own against its local rank's median (nodes 0 and 2 at 1980 MHz).
  EXPECT_DOUBLE_EQ(c[0].step_s, 1000 / (0.7 * 1980));
  EXPECT_DOUBLE_EQ(c[0].median_s, 1000.0 / 1980);
  EXPECT_NEAR(c[0].ratio, 1 / 0.7, 1e-9);
  EXPECT_DOUBLE_EQ(c[0].gpu_clock_max_mhz, 1980);
  EXPECT_EQ(c[0].gpu_clock_reasons.value_or(0), 0x48u);
  EXPECT_EQ(score_.ranks().at(3).measure, StragglerMeasure::kGpuClock);
  // Its node's other rank reads as its peers by both measures.
  EXPECT_DOUBLE_EQ(score_.ranks().at(2).ratio, 1.0);
  EXPECT_FALSE(score_.ranks().at(2).named);

  const Gpus cool = OneSlow(-1, 0);
  EXPECT_TRUE(Interval(cool).empty());
  EXPECT_TRUE(Interval(cool).empty());
  c = Interval(cool);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_FALSE(c[0].detected);
  EXPECT_EQ(c[0].why, "back to the median's pace");
  EXPECT_TRUE(c[0].gpu_clock);  // cleared with the figures of the measure it was named by
  EXPECT_DOUBLE_EQ(c[0].ratio, 1.0);
  EXPECT_EQ(c[0].gpu_clock_reasons.value_or(1), 0u);
}

TEST_F(GpuClockTest, TheSlowestOfARanksGpusSetsItsPace) {
  score_.StartRound(0);
  std::vector<StragglerChange> c;
  for (int i = 0; i < 3; ++i) {
    c = Interval([](int r, int) {
      std::vector<RankGpuSample> two{Gpu(1980), Gpu(1980)};
      if (r == 4) two[1] = Gpu(1200);
      return two;
    });
  }
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].rank, 4);
  EXPECT_NEAR(c[0].ratio, 1980.0 / 1200, 1e-9);
}

TEST_F(GpuClockTest, AClockThatIsLowOnlyWhileItsGpuIsIdleIsNotSlow) {
  score_.StartRound(0);
  // Rank 3's GPU drops to 600 MHz while idle (between steps, waiting for input), and runs at its
  // peers' clock while busy; in the last intervals it is idle throughout.
  const Gpus idle_low = [](int r, int beat) {
    if (r != 3) return std::vector<RankGpuSample>{Gpu(1980)};
    return std::vector<RankGpuSample>{beat < 3 ? Gpu(600, 10, 0x1) : Gpu(1980)};
  };
  for (int i = 0; i < 6; ++i) EXPECT_TRUE(Interval(idle_low).empty()) << "interval " << i;
  EXPECT_DOUBLE_EQ(score_.ranks().at(3).ratio, 1.0);
  const Gpus all_idle = [](int r, int) {
    return std::vector<RankGpuSample>{r == 3 ? Gpu(300, 0, 0x1) : Gpu(1980)};
  };
  for (int i = 0; i < 6; ++i) EXPECT_TRUE(Interval(all_idle).empty()) << "interval " << i;
  EXPECT_EQ(score_.ranks().at(3).measure, StragglerMeasure::kCpuStretch);
  EXPECT_TRUE(score_.named().empty());
}

TEST_F(GpuClockTest, EveryGpuClockedDownAlikeNamesNobody) {
  score_.StartRound(0);
  // A shared cause: the room's cooling, or a power cap set on every node.
  const Gpus capped = [](int, int) { return std::vector<RankGpuSample>{Gpu(1100, 99, 0x4)}; };
  for (int i = 0; i < 8; ++i) EXPECT_TRUE(Interval(capped).empty()) << "interval " << i;
  for (int r = 0; r < 6; ++r) EXPECT_DOUBLE_EQ(score_.ranks().at(r).ratio, 1.0);
  EXPECT_TRUE(score_.named().empty());
}

TEST_F(GpuClockTest, TheCpuStretchStillNamesAStarvedRankWhenTheGpuClocksAreEqual) {
  score_.StartRound(0);
  const Gpus equal = OneSlow(-1, 0);
  std::vector<StragglerChange> c;
  for (int i = 0; i < 5 && c.empty(); ++i) c = Interval(equal, /*starved=*/5);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].rank, 5);
  EXPECT_TRUE(c[0].cpu_stretch);
  EXPECT_FALSE(c[0].gpu_clock);
  EXPECT_DOUBLE_EQ(c[0].step_s, 10.0);   // (2 + 18) / 2
  EXPECT_DOUBLE_EQ(c[0].median_s, 1.5);
  EXPECT_EQ(c[0].gpu_clock_reasons.value_or(1), 0u);  // its GPU: busy, nothing held it
}

TEST_F(GpuClockTest, UntimedReportsOfASynchronousJobAreJoinedByTheGpuClocks) {
  score_.StartRound(0);
  // Every rank reports the same 10 steps in the same 5 s (a synchronous job waits for the
  // slowest), so wall time cannot tell; rank 3's GPU at 900 MHz can.
  std::vector<StragglerChange> c;
  for (int i = 0; i < 8 && c.empty(); ++i) {
    for (int r = 0; r < 6; ++r) score_.OnReport(r, r / 2, Steps(10L * i, 5), now_ + 5);
    c = Interval(OneSlow(3, 900));
  }
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].rank, 3);
  EXPECT_TRUE(c[0].gpu_clock);
  EXPECT_NEAR(c[0].ratio, 1980.0 / 900, 1e-9);
}

TEST_F(GpuClockTest, ReportsThatTimeTheirPhasesAreNotOverruledByTheGpuClocks) {
  score_.StartRound(0);
  // The same clocks, but the reports time each rank's own work, alike: nobody is slow by it.
  for (int i = 0; i < 8; ++i) {
    for (int r = 0; r < 6; ++r) score_.OnReport(r, r / 2, Steps(10L * i, 5, 2), now_ + 5);
    EXPECT_TRUE(Interval(OneSlow(3, 900)).empty()) << i;
  }
  EXPECT_TRUE(score_.named().empty());
}

TEST(GpuClockReasonNamesTest, TheBitsThatHoldABusyGpuDownAreNamed) {
  EXPECT_EQ(GpuClockReasonNames(0x48), (std::vector<std::string>{"hw slowdown", "hw thermal"}));
  EXPECT_EQ(GpuClockReasonNames(0x4 | 0x20 | 0x80 | 0x10 | 0x2),
            (std::vector<std::string>{"power cap", "sync boost", "sw thermal", "power brake",
                                      "applications clocks"}));
  EXPECT_TRUE(GpuClockReasonNames(0x1 | 0x100).empty());  // idle, display clock
  EXPECT_TRUE(GpuClockReasonNames(0).empty());
}

}  // namespace
}  // namespace dlaunch
