#include "launcher/job/job_view.h"

#include <signal.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace dlaunch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

std::map<int, RankProgress> TwoRanks() {
  std::map<int, RankProgress> ranks;
  ranks[0] = {0, 10, v1::WorkerEvent::SUCCEEDED, 640, 2.0, 50, 0.5, true, 0.91, 320};
  ranks[1] = {1, 11, v1::WorkerEvent::SUCCEEDED, 320, 4.0, 50, 0.7, true, std::nullopt, 80};
  return ranks;
}

TEST(JobViewTest, ThroughputIsTheSumOfEachRanksSamplesOverItsBusyTime) {
  v1::JobSummary s;
  SummarizeRanks(TwoRanks(), &s);
  EXPECT_EQ(s.samples(), 960);
  EXPECT_DOUBLE_EQ(s.samples_per_sec(), 640 / 2.0 + 320 / 4.0);
  ASSERT_TRUE(s.has_final_loss());
  EXPECT_DOUBLE_EQ(s.final_loss().value(), 0.6);
  ASSERT_TRUE(s.has_test_accuracy());
  EXPECT_DOUBLE_EQ(s.test_accuracy().value(), 0.91);
  EXPECT_EQ(s.ranks_succeeded().value(), 2);
}

TEST(JobViewTest, RanksWithoutReportsAddNothing) {
  std::map<int, RankProgress> ranks;
  ranks[0].node = 0;
  v1::JobSummary s;
  SummarizeRanks(ranks, &s);
  EXPECT_EQ(s.samples(), 0);
  EXPECT_DOUBLE_EQ(s.samples_per_sec(), 0);
  EXPECT_FALSE(s.has_final_loss());
  EXPECT_FALSE(s.has_test_accuracy());
  ASSERT_TRUE(s.has_ranks_succeeded());
  EXPECT_EQ(s.ranks_succeeded().value(), 0);
}

TEST(JobViewTest, FinalReportSaysTheRestartsAndWhyNoMoreWereMade) {
  v1::JobSummary s;
  s.set_job_id("j");
  s.set_result("failed");
  s.set_exit_code(1);
  s.set_wall_time_s(3.5);
  s.set_nodes(2);
  s.set_world_size(4);
  s.set_failure("rank 3 failed");
  s.set_restarts(2);
  s.set_max_restarts(2);
  s.set_rounds(3);
  s.set_not_restarted("restart budget spent (2 of 2 used)");
  std::vector<std::string> report = FinalReport(s, {}, {});
  EXPECT_EQ(report.front(), "[dlaunch] job j failed in 3.50 s: 2 node(s), 4 worker(s), 2 of 2 restart(s) used");
  EXPECT_THAT(report, ::testing::Contains("[dlaunch] not restarted: restart budget spent (2 of 2 used)"));
}

TEST(JobViewTest, FinalReportShowsTheFailureAndTheTable) {
  v1::JobSummary s;
  s.set_job_id("j");
  s.set_result("failed");
  s.set_exit_code(1);
  s.set_wall_time_s(1.234);
  s.set_nodes(2);
  s.set_world_size(2);
  s.set_failure("rank 1 on node 1 (b) failed with exit code 3");
  s.add_failure_detail("Traceback");
  s.add_failure_detail("boom");
  SummarizeRanks(TwoRanks(), &s);
  std::vector<std::string> lines = FinalReport(s, TwoRanks(), {{0, "a"}, {1, "b"}});
  ASSERT_GE(lines.size(), 8u);
  EXPECT_EQ(lines[0], "[dlaunch] job j failed in 1.23 s: 2 node(s), 2 worker(s)");
  EXPECT_EQ(lines[1], "[dlaunch] rank 1 on node 1 (b) failed with exit code 3");
  EXPECT_EQ(lines[2], "[dlaunch] last lines of its log:");
  EXPECT_EQ(lines[3], "    | Traceback");
  EXPECT_THAT(lines[5], HasSubstr("rank node host"));
  EXPECT_THAT(lines[6], HasSubstr("   0    0 a                       640       320.0       50    0.5000"));
  EXPECT_EQ(lines.back(), "[dlaunch] reported throughput: 400.0 samples/s total, 200.0 per rank, test accuracy 91.00%");
}

TEST(JobViewTest, AFinalReportOfManyRanksListsOnlyTheSlowest) {
  std::map<int, RankProgress> ranks;
  for (int r = 0; r < 100; ++r) {
    ranks[r].node = r / 4;
    ranks[r].samples = 640;
    ranks[r].busy_s = r == 37 ? 10 : 1;  // rank 37 is ten times slower
  }
  v1::JobSummary s;
  s.set_job_id("j");
  s.set_result("succeeded");
  s.set_samples(64000);
  s.set_world_size(100);
  std::vector<std::string> lines = FinalReport(s, ranks, {});
  ASSERT_EQ(lines.size(), 1u + 1 + 8 + 1 + 1);  // head, header, 8 rows, the note, throughput
  EXPECT_THAT(lines[2], ::testing::HasSubstr("  37 "));
  EXPECT_THAT(lines[10], ::testing::HasSubstr("the 8 slowest of 100 ranks"));
}

TEST(JobViewTest, FinalReportOfASuccessWithoutReportsIsOneLine) {
  v1::JobSummary s;
  s.set_job_id("j");
  s.set_result("succeeded");
  s.set_wall_time_s(2);
  EXPECT_THAT(FinalReport(s, {}, {}), ElementsAre("[dlaunch] job j succeeded in 2.00 s"));
}

TEST(JobViewTest, SummaryLineNamesAPhaseAwayFromTraining) {
  std::map<int, RankProgress> ranks;
  ranks[0].step = 180;
  ranks[0].state = v1::WorkerEvent::STARTED;
  ranks[0].phase = v1::WorkerReport::TRAINING;
  ranks[1].step = 180;
  ranks[1].state = v1::WorkerEvent::STARTED;
  EXPECT_EQ(JobPhase(ranks), "");
  ranks[1].phase = v1::WorkerReport::EVALUATING;
  EXPECT_EQ(JobPhase(ranks), "evaluating");
  EXPECT_THAT(SummaryLine(30, 1, 1, 2, 2, ranks), ::testing::EndsWith("step 180  0.0 samples/s  evaluating"));
  // A rank that has ended is no longer evaluating.
  ranks[1].state = v1::WorkerEvent::SUCCEEDED;
  EXPECT_EQ(JobPhase(ranks), "");
}

TEST(JobViewTest, SummaryLineCountsOnlyRunningRanksRates) {
  auto ranks = TwoRanks();
  ranks[1].state = v1::WorkerEvent::STARTED;
  EXPECT_EQ(SummaryLine(12.34, 2, 2, 1, 2, ranks),
            "  12.3s  nodes 2/2 up  workers 1/2 running  step 50  80.0 samples/s");
  EXPECT_EQ(SummaryLine(1, 0, 2, 0, 0, {}), "   1.0s  nodes 0/2 up  workers 0/0 running");
}

TEST(JobViewTest, WorkerExitNamesTheSignal) {
  v1::WorkerEvent ev;
  ev.set_exit_code(3);
  EXPECT_EQ(DescribeWorkerExit(ev), "exit code 3");
  ev.set_signal(SIGKILL);
  EXPECT_EQ(DescribeWorkerExit(ev), "signal 9 (Killed)");
}

}  // namespace
}  // namespace dlaunch
