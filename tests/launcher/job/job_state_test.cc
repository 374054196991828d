// JobState's decisions with synthetic times: no clocks, threads, sockets or processes.
#include "launcher/job/job_state.h"

#include <signal.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/exit_codes.h"
#include "launcher/job/job_events.h"
#include "tests/testing/job_actions.h"
#include "tests/launcher/job/job_state_fixture.h"

namespace dlaunch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
// The fixture and its message helpers (job_state_fixture.h).
using namespace job_state_testing;  // NOLINT(build/namespaces)

TEST_F(JobStateTest, StartAnnouncesTheJob) {
  JobState s(TestJobConfig(2));
  JobActions a = s.OnStarted({"a", "b"}, 0);
  EXPECT_THAT(Printed(a, false), HasSubstr("job job-1: 2 node(s) via local, job dir /runs/job-1"));
  EXPECT_THAT(Events(a), HasSubstr("\"round\":0,\"job_started\":{\"job_id\":\"job-1\""));
  EXPECT_THAT(Events(a), HasSubstr("\"hosts\":[\"n0\",\"n1\"]"));
}

TEST_F(JobStateTest, AHostLineCarriesTheNodesGpuSamples) {
  Begin(1, 1);
  v1::AgentMessage hb = Heartbeat(1);
  hb.mutable_heartbeat()->mutable_host()->set_load1(0.5);
  v1::GpuSample* g = hb.mutable_heartbeat()->add_gpus();
  g->set_device("0");
  g->set_utilization_pct(93);
  g->set_memory_used_mib(20480);
  g->set_memory_total_mib(143771);
  g->set_temperature_c(54);
  g->set_power_w(512.5);
  std::vector<AppendHostSample> lines = All<AppendHostSample>(state_->OnAgentMessage(0, hb, 2));
  ASSERT_EQ(lines.size(), 1u);
  ASSERT_EQ(lines[0].gpus.size(), 1u);
  v1::MetricLine line = HostLineOf("t", lines[0].node, lines[0].round, lines[0].host, lines[0].gpus);
  const std::string json = MetricJournalLine(line).value();
  EXPECT_THAT(json, HasSubstr("\"gpus\":[{\"device\":\"0\",\"utilization_pct\":93,"
                              "\"memory_used_mib\":\"20480\",\"memory_total_mib\":\"143771\","
                              "\"temperature_c\":54,\"power_w\":512.5}]"));
  // A node without GPUs writes an empty list, as every repeated field of the schema.
  v1::AgentMessage cpu_only = Heartbeat(1);
  cpu_only.mutable_heartbeat()->mutable_host()->set_load1(0.5);
  EXPECT_TRUE(All<AppendHostSample>(state_->OnAgentMessage(0, cpu_only, 100))[0].gpus.empty());
}

TEST_F(JobStateTest, AllRanksSucceedingFinishesWithZeroOnceNodesAreGone) {
  Begin(2, 1);
  EXPECT_FALSE(ExitCode(state_->OnAgentMessage(0, Worker(0, v1::WorkerEvent::SUCCEEDED), 5)));
  JobActions last = state_->OnAgentMessage(1, Worker(1, v1::WorkerEvent::SUCCEEDED), 6);
  // Succeeded, but the agents are still connected: no finish yet, and no stop sent.
  EXPECT_FALSE(ExitCode(last));
  EXPECT_FALSE(Has<SendStop>(last));
  JobActions end = EndAll(7);
  EXPECT_EQ(ExitCode(end), kExitOk);
  EXPECT_TRUE(state_->finished());
  auto summary = All<WriteSummary>(end);
  ASSERT_EQ(summary.size(), 1u);
  EXPECT_EQ(summary[0].summary.result(), "succeeded");
  EXPECT_EQ(summary[0].summary.exit_code(), 0);
  EXPECT_FALSE(summary[0].summary.has_root_cause());
  EXPECT_THAT(Events(end), HasSubstr("\"job_finished\":{\"result\":\"succeeded\""));
  EXPECT_THAT(Printed(end, false), HasSubstr("[dlaunch] job job-1 succeeded in 7.00 s: 2 node(s), 2 worker(s)"));
}

TEST_F(JobStateTest, AnEventForARankThatEndedIsIgnoredAndCounted) {
  // A broken agent reports rank 0 STARTED after its success: the rank must not run again, or
  // the job would wait forever for its second end; nor is a second end journaled or counted.
  Begin(2, 1);
  state_->OnAgentMessage(0, Worker(0, v1::WorkerEvent::STARTED), 2);
  state_->OnAgentMessage(0, Worker(0, v1::WorkerEvent::SUCCEEDED), 3);
  JobActions late = state_->OnAgentMessage(0, Worker(0, v1::WorkerEvent::STARTED), 3.5);
  EXPECT_THAT(Events(late), Not(HasSubstr("worker_started")));
  EXPECT_THAT(Printed(late, false), HasSubstr("node 0 reported rank 0 STARTED after it ended; ignored"));
  JobActions again = state_->OnAgentMessage(0, Worker(0, v1::WorkerEvent::FAILED, 1), 3.6);
  EXPECT_THAT(Events(again), Not(HasSubstr("failure_detected")));
  EXPECT_TRUE(Printed(again, false).empty());  // said once
  state_->OnAgentMessage(1, Worker(1, v1::WorkerEvent::SUCCEEDED), 4);
  JobActions end = EndAll(5);
  EXPECT_EQ(ExitCode(end), kExitOk);
  EXPECT_THAT(Printed(end, false), HasSubstr("2 worker event(s) for ranks that had already ended were ignored"));
}

TEST_F(JobStateTest, SuccessWaitsForLaunchersBoundedByTheStopDeadline) {
  Begin(1, 1);
  state_->OnAgentMessage(0, Worker(0, v1::WorkerEvent::SUCCEEDED), 5);
  JobActions ended = state_->OnSessionEnded(0, 100, 6);
  EXPECT_FALSE(ExitCode(ended));
  auto arm = All<ArmStopDeadline>(ended);
  ASSERT_EQ(arm.size(), 1u);
  EXPECT_DOUBLE_EQ(arm[0].at_s, 6 + 2 + 3 + 5);  // grace + heartbeat x misses + slack
  JobActions late = state_->OnStopDeadline(16);
  EXPECT_TRUE(Has<KillLaunchers>(late));
  EXPECT_THAT(Printed(late, true), HasSubstr("did not finish stopping in time"));
  // Everyone succeeded, so the result stands.
  EXPECT_EQ(ExitCode(late), kExitOk);
}

TEST_F(JobStateTest, FirstFailureStopsEveryNodeAndIsTheOneReported) {
  Begin(2, 2);
  v1::AgentMessage fail = Worker(3, v1::WorkerEvent::FAILED, 3);
  fail.mutable_worker()->add_last_lines("failing on purpose");
  JobActions a = state_->OnAgentMessage(1, fail, 4);
  EXPECT_THAT(Printed(a, true),
              HasSubstr("[dlaunch] error: worker crash: rank 3 (local 1, node 1, host n1) exited with "
                        "code 3; stopping all workers"));
  EXPECT_THAT(Events(a), HasSubstr("\"worker_failed\":{\"rank\":3,\"node_id\":1,\"node_rank\":1,\"host\":\"n1\",\"exit_code\":3"));
  auto stop = All<SendStop>(a);
  ASSERT_EQ(stop.size(), 1u);
  EXPECT_THAT(stop[0].nodes, ElementsAre(0, 1));
  EXPECT_EQ(stop[0].grace_ms, 2000);
  EXPECT_THAT(stop[0].reason, HasSubstr("rank 3 (local 1, node 1, host n1)"));
  EXPECT_FALSE(Has<StopLaunchers>(a)) << "agents past the rendezvous stop their own workers";

  // A second failure changes nothing.
  JobActions b = state_->OnAgentMessage(0, Worker(0, v1::WorkerEvent::FAILED, 9), 5);
  EXPECT_FALSE(Has<SendStop>(b));
  EXPECT_THAT(Printed(b, true), IsEmpty());

  JobActions end = EndAll(6);
  EXPECT_EQ(ExitCode(end), kExitJobFailed);
  std::string report = Printed(end, true);
  EXPECT_THAT(report, HasSubstr("[dlaunch] root cause: worker crash: rank 3 (local 1, node 1, "
                                "host n1) exited with code 3"));
  EXPECT_THAT(report, HasSubstr("[dlaunch] consequence: worker crash: rank 0 (local 0, node 0, "
                                "host n0) exited with code 9"));
  EXPECT_THAT(report, HasSubstr("    | failing on purpose"));
}

TEST_F(JobStateTest, SignalledRankIsDescribedBySignal) {
  Begin(1, 1);
  JobActions a = state_->OnAgentMessage(0, Worker(0, v1::WorkerEvent::FAILED, 0, SIGKILL), 2);
  EXPECT_THAT(Printed(a, true), HasSubstr("rank 0 (local 0, node 0, host n0) killed by signal 9 (Killed)"));
}

TEST_F(JobStateTest, RepeatedStopsNeverMoveTheKillDeadlineLater) {
  Begin(2, 1);
  JobActions first = state_->OnAgentMessage(0, Worker(0, v1::WorkerEvent::FAILED, 1), 10);
  auto arm = All<ArmStopDeadline>(first);
  ASSERT_EQ(arm.size(), 1u);
  EXPECT_DOUBLE_EQ(arm[0].at_s, 10 + 2 + 3 + 5);
  // Ctrl-C later: stopping again must not re-arm a later deadline.
  JobActions sig = state_->OnSignal(SIGINT, 12);
  EXPECT_FALSE(Has<ArmStopDeadline>(sig));
  // An early timer (an older deadline) does nothing.
  EXPECT_THAT(state_->OnStopDeadline(19), IsEmpty());
  JobActions late = state_->OnStopDeadline(20);
  EXPECT_TRUE(Has<KillLaunchers>(late));
  EXPECT_EQ(ExitCode(late), kExitJobFailed) << "the first failure is the result";
}

TEST_F(JobStateTest, SecondCtrlCKillsNowAndMovesTheDeadlineEarlier) {
  Begin(2, 1);
  JobActions first = state_->OnSignal(SIGINT, 10);
  EXPECT_THAT(Printed(first, true), HasSubstr("[dlaunch] interrupted by signal 2; stopping all workers"));
  EXPECT_THAT(Printed(first, true), HasSubstr("waiting up to 2 s for workers to stop (Ctrl-C again to kill them now)"));
  auto stop = All<SendStop>(first);
  ASSERT_EQ(stop.size(), 1u);
  EXPECT_EQ(stop[0].grace_ms, 2000);
  ASSERT_EQ(All<ArmStopDeadline>(first).size(), 1u);
  EXPECT_DOUBLE_EQ(All<ArmStopDeadline>(first)[0].at_s, 20);

  JobActions second = state_->OnSignal(SIGINT, 10.5);
  EXPECT_THAT(Printed(second, true), HasSubstr("killing all workers now"));
  stop = All<SendStop>(second);
  ASSERT_EQ(stop.size(), 1u);
  EXPECT_EQ(stop[0].grace_ms, 0);
  auto launchers = All<StopLaunchers>(second);
  ASSERT_EQ(launchers.size(), 1u);
  EXPECT_EQ(launchers[0].grace_ms, 500);
  auto arm = All<ArmStopDeadline>(second);
  ASSERT_EQ(arm.size(), 1u);
  EXPECT_DOUBLE_EQ(arm[0].at_s, 10.5 + 0 + 3 + 5);

  EXPECT_EQ(ExitCode(EndAll(11)), kExitInterrupted);
}

TEST_F(JobStateTest, SilentNodeIsLostAfterMissedHeartbeats) {
  Begin(2, 1);
  // Node 0 keeps beating, node 1 goes quiet after t=1. Limit: 1 s x 3 misses.
  for (double t = 2; t <= 4; t += 1) {
    state_->OnAgentMessage(0, Heartbeat(1), t);
    JobActions tick = state_->OnTick(t);
    EXPECT_FALSE(Has<SendStop>(tick)) << "t=" << t;
    auto ping = All<SendPing>(tick);
    ASSERT_EQ(ping.size(), 1u);
    EXPECT_THAT(ping[0].nodes, ElementsAre(0, 1));
  }
  state_->OnAgentMessage(0, Heartbeat(1), 4.1);
  JobActions lost = state_->OnTick(4.1);
  EXPECT_THAT(Events(lost), HasSubstr("\"node_lost\":{\"node_id\":1,\"node_rank\":1,\"host\":\"n1\",\"reason\":\"no heartbeat for 3.1 s\""));
  EXPECT_THAT(Printed(lost, true), HasSubstr("error: node silent: node 1 (host n1): no heartbeat for 3.1 s"));
  EXPECT_TRUE(Has<SendStop>(lost));
}

TEST_F(JobStateTest, ATickRunningLateAllowsForHeartbeatsStillInTheQueue) {
  Begin(2, 1);
  state_->OnAgentMessage(0, Heartbeat(1), 4.0);  // node 0 beats; node 1 is silent from t=1
  // 3.5 s of silence against a 3 s limit, but the tick ran 1 s after it was due: a heartbeat
  // that arrived in that second may still be waiting behind it.
  JobActions late = state_->OnTick(4.5, 1.0);
  EXPECT_FALSE(Has<SendStop>(late)) << Printed(late);
  JobActions on_time = state_->OnTick(4.6, 0);
  EXPECT_TRUE(Has<SendStop>(on_time));
  EXPECT_THAT(Printed(on_time, true), HasSubstr("node silent: node 1 (host n1)"));
}

TEST_F(JobStateTest, AgentThatNeverOpensItsSessionIsLost) {
  JobState s(TestJobConfig(2));
  s.OnStarted({"a", "b"}, 0);
  s.OnRendezvousClosed(Round(2, 1), 1);
  s.OnSessionOpened(0, 100, 1);
  for (double t = 2; t <= 9; t += 1) {
    s.OnAgentMessage(0, Heartbeat(1), t);
    EXPECT_THAT(Events(s.OnTick(t)), IsEmpty()) << "t=" << t;  // limit: 3 s + 5 s after close
  }
  s.OnAgentMessage(0, Heartbeat(1), 9.5);
  EXPECT_THAT(Events(s.OnTick(9.5)), HasSubstr("its agent joined but never opened its session"));
}

TEST_F(JobStateTest, SessionEndingWithUnfinishedWorkersLosesTheNode) {
  Begin(2, 1);
  state_->OnAgentMessage(0, Worker(0, v1::WorkerEvent::STARTED), 2);
  JobActions a = state_->OnSessionEnded(0, 100, 3);
  EXPECT_THAT(Printed(a, true),
              HasSubstr("agent lost: node 0 (host n0): its agent's session ended with workers "
                        "unaccounted for"));
  auto stop = All<SendStop>(a);
  ASSERT_EQ(stop.size(), 1u);
  EXPECT_THAT(stop[0].nodes, ElementsAre(1)) << "only nodes with an open session are told";
}

TEST_F(JobStateTest, ReplacedSessionEndingIsIgnored) {
  Begin(1, 1);
  state_->OnSessionOpened(0, 200, 2);  // the agent reconnected
  JobActions a = state_->OnSessionEnded(0, 100, 3);
  EXPECT_THAT(a, IsEmpty());
}

TEST_F(JobStateTest, LauncherFailingBeforeTheRoundClosesIsALaunchError) {
  JobState s(TestJobConfig(2));
  s.OnStarted({"mpiexec"}, 0);
  JobActions a = s.OnLauncherExited(0, kExited1, {"mpiexec: no hosts"}, 3);
  EXPECT_THAT(Printed(a, true),
              HasSubstr("node launcher `mpiexec` (local #0) ended with exit code 1 before all nodes joined"));
  EXPECT_TRUE(Has<StopLaunchers>(a)) << "no agent has workers yet";
  EXPECT_EQ(ExitCode(a), kExitLaunchError) << "no session and no launcher left";
  EXPECT_THAT(Printed(a, true), HasSubstr("    | mpiexec: no hosts"));
}

TEST_F(JobStateTest, LauncherKilledAfterTheRoundLeavesTheVerdictToItsNodesSessions) {
  Begin(2, 1);
  state_->OnAgentMessage(0, Worker(0, v1::WorkerEvent::STARTED), 2);
  state_->OnAgentMessage(1, Worker(1, v1::WorkerEvent::STARTED), 2);
  JobActions a = state_->OnLauncherExited(1, kKilled, {}, 3);
  EXPECT_FALSE(Has<SendStop>(a)) << "the launcher's death names no node";
  JobActions lost = state_->OnSessionEnded(1, 101, 3.01);
  EXPECT_TRUE(Has<SendStop>(lost));
  EXPECT_THAT(Printed(lost, true), HasSubstr("agent lost"));
  EXPECT_THAT(Printed(lost, true), HasSubstr("node 1"));
}

TEST_F(JobStateTest, LauncherExitingCleanlyAfterTheRoundIsNotAFailure) {
  Begin(2, 1);
  EXPECT_THAT(Printed(state_->OnLauncherExited(1, kExited1, {}, 3), true), IsEmpty())
      << "its agent's session says what happened to the node";
}

TEST_F(JobStateTest, RendezvousFailureIsALaunchErrorThatStopsTheLaunchers) {
  JobState s(TestJobConfig(2));
  s.OnStarted({"a", "b"}, 0);
  JobActions a = s.OnRendezvousFailed(absl::DeadlineExceededError("rendezvous timed out after 2 s: 1 of 2 nodes joined"), 2);
  EXPECT_THAT(Printed(a, true), HasSubstr("error: rendezvous timed out after 2 s: 1 of 2 nodes joined"));
  // No worker ever ran: there are none to stop.
  EXPECT_THAT(Printed(a, true), Not(HasSubstr("stopping all workers")));
  EXPECT_TRUE(Has<StopLaunchers>(a));
  s.OnLauncherExited(0, kExited1, {}, 2.5);
  JobActions end = s.OnLauncherExited(1, kExited1, {}, 2.6);
  EXPECT_EQ(ExitCode(end), kExitLaunchError);
}

TEST_F(JobStateTest, StopDecidedDuringTheRendezvousReachesLateSessions) {
  JobState s(TestJobConfig(1));
  s.OnStarted({"a"}, 0);
  s.OnSignal(SIGINT, 0.5);
  JobActions closed = s.OnRendezvousClosed(Round(1, 1), 1);
  EXPECT_FALSE(Has<SendStop>(closed)) << "no session is open yet";
  JobActions opened = s.OnSessionOpened(0, 100, 1.2);
  auto stop = All<SendStop>(opened);
  ASSERT_EQ(stop.size(), 1u);
  EXPECT_THAT(stop[0].nodes, ElementsAre(0));
  EXPECT_EQ(stop[0].reason, "interrupted by signal 2");
}

TEST_F(JobStateTest, AllWorkersStartedIsReportedOnce) {
  Begin(2, 1);
  EXPECT_THAT(Events(state_->OnAgentMessage(0, Worker(0, v1::WorkerEvent::STARTED), 2)),
              Not(HasSubstr("workers_started")));
  JobActions all = state_->OnAgentMessage(1, Worker(1, v1::WorkerEvent::STARTED), 2.5);
  EXPECT_THAT(Printed(all, false), HasSubstr("all 2 workers started in 2.50 s"));
  EXPECT_THAT(Events(all), HasSubstr("\"workers_started\":{\"workers\":2"));
  EXPECT_THAT(Events(state_->OnAgentMessage(1, Worker(1, v1::WorkerEvent::STARTED), 3)),
              Not(HasSubstr("workers_started")));
}

// The timeline draws each rank's process from these two records (docs/trace.md).
TEST_F(JobStateTest, EachWorkerStartAndEndIsAnEvent) {
  Begin(2, 1);
  EXPECT_THAT(Events(state_->OnAgentMessage(1, Worker(1, v1::WorkerEvent::STARTED), 2)),
              HasSubstr("\"worker_started\":{\"rank\":1,\"local_rank\":0,\"node_id\":1,\"node_rank\":1,"
                        "\"host\":\"n1\""));
  EXPECT_THAT(Events(state_->OnAgentMessage(1, Worker(1, v1::WorkerEvent::SUCCEEDED), 5)),
              HasSubstr("\"worker_ended\":{\"rank\":1,\"node_id\":1,\"node_rank\":1,\"host\":\"n1\","
                        "\"state\":\"succeeded\",\"exit_code\":0,\"signal\":0"));
}

TEST_F(JobStateTest, TheFirstStopIsAnEvent) {
  Begin(1, 1);
  EXPECT_THAT(Events(state_->OnSignal(SIGINT, 2)),
              HasSubstr("\"stop_requested\":{\"reason\":\"interrupted by signal 2\""));
  EXPECT_THAT(Events(state_->OnSignal(SIGINT, 3)), Not(HasSubstr("stop_requested")));
}

TEST_F(JobStateTest, ReportsBecomeMetricsAndTheSummaryLine) {
  Begin(1, 2);
  v1::AgentMessage hb = Heartbeat(2);
  for (int rank = 0; rank < 2; ++rank) {
    v1::WorkerReport* r = hb.mutable_heartbeat()->add_reports();
    r->set_rank(rank);
    r->set_step(40);
    r->set_samples(100);
    r->set_interval_s(2);
  }
  JobActions a = state_->OnAgentMessage(0, hb, 4);
  auto metrics = All<AppendMetric>(a);
  ASSERT_EQ(metrics.size(), 2u);
  EXPECT_EQ(metrics[1].node, 0);
  EXPECT_EQ(metrics[1].report.rank(), 1);
  EXPECT_THAT(Printed(state_->OnTick(4.9), false), IsEmpty()) << "summary every 5 s";
  EXPECT_THAT(Printed(state_->OnTick(5), false),
              HasSubstr("[dlaunch]    5.0s  nodes 1/1 up  workers 2/2 running  step 40  100.0 samples/s"));
}

TEST_F(JobStateTest, LogLinesArePrintedPerRank) {
  Begin(1, 1);
  v1::AgentMessage m;
  m.mutable_log()->set_rank(0);
  m.mutable_log()->set_stderr(true);
  m.mutable_log()->add_lines("oops");
  EXPECT_EQ(Printed(state_->OnAgentMessage(0, m, 2), true), "[rank 0] oops\n");
}

TEST_F(JobStateTest, RefusedCallIsPrintedAndRecorded) {
  JobState s(TestJobConfig(1));
  JobActions a = s.OnCallRefused("ipv4:1.2.3.4:5", "Join");
  EXPECT_THAT(Printed(a, true), HasSubstr("refused Join from ipv4:1.2.3.4:5: missing or wrong job token"));
  EXPECT_THAT(Events(a), HasSubstr("\"call_refused\":{\"peer\":\"ipv4:1.2.3.4:5\""));
}

TEST_F(JobStateTest, NothingHappensAfterTheEnd) {
  Begin(1, 1);
  state_->OnAgentMessage(0, Worker(0, v1::WorkerEvent::SUCCEEDED), 2);
  ASSERT_EQ(ExitCode(EndAll(3)), kExitOk);
  EXPECT_THAT(state_->OnTick(10), IsEmpty());
  EXPECT_THAT(state_->OnSignal(SIGINT, 10), IsEmpty());
  EXPECT_THAT(state_->OnStopDeadline(100), IsEmpty());
}

TEST_F(JobStateTest, TickIntervalIsTheHeartbeatAtMostOneSecond) {
  JobConfig c = TestJobConfig(1);
  c.heartbeat_s = 0.25;
  EXPECT_DOUBLE_EQ(JobState(c).tick_interval_s(), 0.25);
  c.heartbeat_s = 5;
  EXPECT_DOUBLE_EQ(JobState(c).tick_interval_s(), 1);
}

}  // namespace
}  // namespace dlaunch
