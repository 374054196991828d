// metrics.jsonl at scale: past 4,000 reports a second a rank's reports are folded into one line
// per interval, said at the rendezvous and at the end, and no sample is lost (metrics_cadence.h).
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/launcher/job/job_state_fixture.h"

namespace dlaunch {
namespace {

using namespace job_state_testing;  // NOLINT
using ::testing::HasSubstr;
using ::testing::Not;

v1::AgentMessage Report(int rank, int64_t step) {
  v1::AgentMessage m = Heartbeat(4);
  v1::WorkerReport* r = m.mutable_heartbeat()->add_reports();
  r->set_rank(rank);
  r->set_kind(v1::WorkerReport::STEP);
  r->set_step(step);
  r->set_samples(10);
  r->set_interval_s(1);
  return m;
}

TEST(JobStateMetricsTest, PastTheLineRateARanksReportsAreFoldedAndNoSampleIsLost) {
  const int nodes = 1100;  // x 4 ranks at a 1 s heartbeat: 4,400 reports a second
  JobState state(TestJobConfig(nodes));
  state.OnStarted(std::vector<std::string>(nodes, "dlaunch-agent"), 0);
  JobActions closed = state.OnRendezvousClosed(Round(nodes, 4), 1);
  EXPECT_THAT(Printed(closed), HasSubstr("each rank's reports are folded into one line every 1.1 s"));
  for (int i = 0; i < nodes; ++i) state.OnSessionOpened(i, 100 + i, 1);
  state.OnAgentMessage(0, Worker(0, v1::WorkerEvent::STARTED), 1);

  int64_t samples = 0;
  int lines = 0;
  auto count = [&](const JobActions& a) {
    for (const AppendMetric& m : All<AppendMetric>(a)) {
      EXPECT_EQ(m.report.rank(), 0);
      samples += m.report.samples();
      ++lines;
    }
  };
  for (int t = 2; t < 12; ++t) count(state.OnAgentMessage(0, Report(0, t), t));
  EXPECT_EQ(lines, 5);  // t = 2 at once, then 4, 6, 8, 10: two reports a line
  count(state.OnAgentMessage(0, Worker(0, v1::WorkerEvent::SUCCEEDED), 12));  // t = 11, held
  EXPECT_EQ(lines, 6);
  EXPECT_EQ(samples, 100);
}

TEST(JobStateMetricsTest, BelowTheLineRateEveryReportIsALine) {
  const int nodes = 900;  // 3,600 reports a second
  JobState state(TestJobConfig(nodes));
  state.OnStarted(std::vector<std::string>(nodes, "dlaunch-agent"), 0);
  JobActions closed = state.OnRendezvousClosed(Round(nodes, 4), 1);
  EXPECT_THAT(Printed(closed), Not(HasSubstr("metrics.jsonl")));
  for (int i = 0; i < nodes; ++i) state.OnSessionOpened(i, 100 + i, 1);
  int lines = 0;
  for (int t = 2; t < 7; ++t) {
    lines += static_cast<int>(All<AppendMetric>(state.OnAgentMessage(0, Report(0, t), t)).size());
  }
  EXPECT_EQ(lines, 5);
}

}  // namespace
}  // namespace dlaunch
