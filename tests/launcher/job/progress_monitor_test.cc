#include "launcher/job/progress_monitor.h"

#include "gtest/gtest.h"

namespace dlaunch {
namespace {

ProgressSettings Fixed(double stall, double startup, double exit_timeout) {
  ProgressSettings s;
  s.stall_timeout_s = stall;
  s.startup_timeout_s = startup;
  s.exit_timeout_s = exit_timeout;
  return s;
}

TEST(ProgressMonitorTest, ARankSilentPastTheLimitIsStalledAndTheOneBehindComesFirst) {
  ProgressMonitor m(Fixed(10, 100, 30));
  m.StartRound({0, 1, 2}, 0);
  for (int r : {0, 1, 2}) m.OnProgress(r, 1, 1);
  m.OnProgress(0, 2, 2);
  m.OnProgress(2, 2, 2);   // rank 1 stopped after step 1; the others then block at step 2
  EXPECT_TRUE(m.Check(10.9).empty());
  EXPECT_DOUBLE_EQ(m.NextDeadline(), 11.0);
  std::vector<Hang> h = m.Check(12.5);
  ASSERT_EQ(h.size(), 3u);
  EXPECT_EQ(h[0].rank, 1);
  EXPECT_EQ(h[0].kind, HangKind::kStall);
  EXPECT_EQ(h[0].last_step, 1);
  EXPECT_DOUBLE_EQ(h[0].silent_s, 11.5);
  EXPECT_EQ(h[1].rank, 0);
}

TEST(ProgressMonitorTest, OutputLinesCountAsProgressForScriptsThatSendNoReports) {
  ProgressMonitor m(Fixed(10, 100, 30));
  m.StartRound({0}, 0);
  m.OnProgress(0, -1, 50);    // first line of output: no longer starting up
  m.OnProgress(0, -1, 58);
  EXPECT_TRUE(m.Check(67).empty());
  ASSERT_EQ(m.Check(68.5).size(), 1u);
}

TEST(ProgressMonitorTest, StartupHasItsOwnAllowance) {
  ProgressMonitor m(Fixed(10, 100, 30));
  m.StartRound({0, 1}, 0);
  m.OnProgress(1, 0, 5);
  std::vector<Hang> h = m.Check(99);
  ASSERT_EQ(h.size(), 1u);   // rank 1 stalled; rank 0 still within its start-up allowance
  EXPECT_EQ(h[0].rank, 1);
  h = m.Check(100);
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h[0].rank, 0);
  EXPECT_EQ(h[0].kind, HangKind::kStartup);
}

TEST(ProgressMonitorTest, AdaptiveLimitIsTheLargerOfTheFloorAndFiveTimesTheP99Step) {
  ProgressSettings s;   // adaptive: floor 60 s, 5 x p99
  ProgressMonitor m(s);
  m.StartRound({0}, 0);
  EXPECT_DOUBLE_EQ(m.StallLimit(), 60);
  for (int step = 0; step <= 100; ++step) m.OnProgress(0, step, step * 2.0);   // 2 s per step
  EXPECT_DOUBLE_EQ(m.StallLimit(), 60);
  for (int step = 101; step <= 120; ++step) m.OnProgress(0, step, 200 + (step - 100) * 20.0);
  EXPECT_DOUBLE_EQ(m.StallLimit(), 100);   // p99 of the intervals is 20 s
}

TEST(ProgressMonitorTest, ARankStillRunningAfterAPeerExitedZeroHangsAtTheExitTimeout) {
  ProgressMonitor m(Fixed(1000, 1000, 30));
  m.StartRound({0, 1}, 0);
  m.OnProgress(0, 10, 5);
  m.OnProgress(1, 10, 5);
  m.OnExit(1, true, 6);
  EXPECT_TRUE(m.Check(35.9).empty());
  EXPECT_DOUBLE_EQ(m.NextDeadline(), 36);
  std::vector<Hang> h = m.Check(36);
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0].rank, 0);
  EXPECT_EQ(h[0].kind, HangKind::kExitHang);
  m.OnExit(0, true, 37);
  EXPECT_TRUE(m.Check(100).empty());
}

TEST(ProgressMonitorTest, AFailedExitStartsNoExitHangClockAndANewRoundForgetsTheOld) {
  ProgressMonitor m(Fixed(1000, 1000, 30));
  m.StartRound({0, 1}, 0);
  m.OnExit(1, false, 1);
  EXPECT_TRUE(m.Check(100).empty());
  m.OnExit(0, true, 101);
  m.StartRound({0, 1}, 200);
  EXPECT_TRUE(m.Check(300).empty());
}

TEST(ProgressMonitorTest, StallDetectionCanBeTurnedOffButExitHangsStillCount) {
  ProgressSettings s = Fixed(10, 10, 30);
  s.stall_detection = false;
  ProgressMonitor m(s);
  m.StartRound({0, 1}, 0);
  EXPECT_TRUE(m.Check(1e6).empty());
  m.OnExit(0, true, 10);
  EXPECT_EQ(m.Check(40).size(), 1u);
}

}  // namespace
}  // namespace dlaunch
