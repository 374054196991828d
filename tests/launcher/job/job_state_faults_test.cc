// JobState's fault verdicts with synthetic times: which rank is the root cause when several
// fail, hangs at exit, stalls, and a frozen node told apart from a stall.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/exit_codes.h"
#include "launcher/job/job_events.h"
#include "tests/launcher/job/job_state_fixture.h"

namespace dlaunch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
// The fixture and its message helpers (job_state_fixture.h).
using namespace job_state_testing;  // NOLINT(build/namespaces)

TEST_F(JobStateTest, KilledRankIsTheRootCauseEvenWhenItsPeersFailureArrivesFirst) {
  Begin(2, 1);
  // Rank 1 fails in Gloo because rank 0 died; its event happens to reach the launcher first.
  v1::AgentMessage peer = Worker(1, v1::WorkerEvent::FAILED, 1);
  peer.mutable_worker()->add_last_lines(
      "RuntimeError: [gloo/transport/tcp/pair.cc:598] Connection reset by peer [10.0.0.0]:4242");
  JobActions first = state_->OnAgentMessage(1, peer, 3);
  EXPECT_TRUE(Has<SendStop>(first)) << "the job stops at once";
  EXPECT_THAT(Printed(first, true), IsEmpty()) << "a peer's reaction is not announced as the cause";
  auto arm = All<ArmHealthCheck>(first);
  ASSERT_FALSE(arm.empty());
  EXPECT_DOUBLE_EQ(arm.back().at_s, 3.5);

  JobActions killed = state_->OnAgentMessage(0, Worker(0, v1::WorkerEvent::FAILED, 0, SIGKILL), 3.05);
  EXPECT_EQ(Printed(killed, true),
            "[dlaunch] error: worker crash: rank 0 (local 0, node 0, host n0) killed by signal 9 "
            "(Killed); stopping all workers\n");
  EXPECT_THAT(Printed(state_->OnHealthCheck(3.5), true), IsEmpty()) << "announced once";

  JobActions end = EndAll(4);
  EXPECT_EQ(ExitCode(end), kExitJobFailed);
  const v1::JobSummary summary = SummaryOf(end);
  const v1::FailureRecord& root = summary.root_cause();
  EXPECT_EQ(root.failure_class(), "worker crash");
  EXPECT_EQ(root.rank(), 0);
  EXPECT_EQ(root.local_rank(), 0);
  EXPECT_EQ(root.node_rank(), 0);
  EXPECT_EQ(root.node_id(), 0);
  EXPECT_EQ(root.host(), "n0");
  EXPECT_EQ(root.signal(), 9);
  EXPECT_FALSE(root.has_exit_code());
  ASSERT_EQ(summary.consequences_size(), 1);
  EXPECT_EQ(summary.consequences(0).failure_class(), "worker crash");
  EXPECT_EQ(summary.consequences(0).rank(), 1);
  EXPECT_THAT(summary.consequences(0).log_tail(), ElementsAre(HasSubstr("Connection reset by peer")));
  std::string report = Printed(end, true);
  EXPECT_THAT(report, HasSubstr("[dlaunch] root cause: worker crash: rank 0 (local 0, node 0, "
                                "host n0) killed by signal 9 (Killed)"));
  EXPECT_THAT(report, HasSubstr("[dlaunch] consequence: worker crash: rank 1 (local 0, node 1, "
                                "host n1) exited with code 1"));
}

TEST_F(JobStateTest, RankKilledFromOutsideIsTheRootEvenWhenItsAgentHeardTheStopFirst) {
  Begin(2, 1);
  v1::AgentMessage peer = Worker(1, v1::WorkerEvent::FAILED, 1);
  peer.mutable_worker()->add_last_lines("Connection reset by peer");
  state_->OnAgentMessage(1, peer, 3);
  // Rank 0's agent got the stop before it reaped the rank: STOPPED, but by a SIGKILL that no
  // agent sends within the 2 s grace.
  JobActions killed = state_->OnAgentMessage(0, Worker(0, v1::WorkerEvent::STOPPED, 0, SIGKILL), 3.1);
  EXPECT_THAT(Printed(killed, true),
              HasSubstr("[dlaunch] error: worker crash: rank 0 (local 0, node 0, host n0) killed by "
                        "signal 9 (Killed)"));
  // After the grace, a SIGKILL is the agent's own escalation: not a failure.
  JobActions late = state_->OnAgentMessage(0, Worker(0, v1::WorkerEvent::STOPPED, 0, SIGKILL), 5.5);
  EXPECT_THAT(Events(late), Not(HasSubstr("failure_detected")));
}

TEST_F(JobStateTest, PeerFailureAloneIsAnnouncedOnceTheSettleTimePassed) {
  Begin(2, 1);
  v1::AgentMessage peer = Worker(1, v1::WorkerEvent::FAILED, 1);
  peer.mutable_worker()->add_last_lines("gloo: Connection reset by peer");
  EXPECT_THAT(Printed(state_->OnAgentMessage(1, peer, 3), true), IsEmpty());
  EXPECT_THAT(Printed(state_->OnHealthCheck(3.49), true), IsEmpty());
  EXPECT_THAT(Printed(state_->OnHealthCheck(3.5), true),
              HasSubstr("[dlaunch] error: worker crash: rank 1 (local 0, node 1, host n1) exited "
                        "with code 1"));
}

TEST_F(JobStateTest, HangAtExitIsDetectedAtExactlyTheExitTimeout) {
  JobConfig c = TestJobConfig(2);
  c.progress.exit_timeout_s = 2;
  state_ = std::make_unique<JobState>(c);
  nodes_ = 2;
  state_->OnStarted({"a", "b"}, 0);
  state_->OnRendezvousClosed(Round(2, 1), 1);
  for (int i = 0; i < 2; ++i) state_->OnSessionOpened(i, 100 + i, 1);

  JobActions done = state_->OnAgentMessage(1, Worker(1, v1::WorkerEvent::SUCCEEDED), 5);
  auto arm = All<ArmHealthCheck>(done);
  ASSERT_EQ(arm.size(), 1u);
  EXPECT_DOUBLE_EQ(arm[0].at_s, 7);
  EXPECT_FALSE(Has<SendStop>(state_->OnHealthCheck(6.999)));

  JobActions hang = state_->OnHealthCheck(7);
  EXPECT_EQ(Printed(hang, true),
            "[dlaunch] error: hang at exit: rank 0 (local 0, node 0, host n0): still running "
            "2.0 s after another rank exited 0 (stop.exit_timeout 2.0 s); stopping all workers\n");
  EXPECT_THAT(Events(hang), HasSubstr("\"hang_detected\":{\"failure_class\":\"hang at exit\","
                                      "\"rank\":0,\"local_rank\":0,\"node_id\":0,\"node_rank\":0,"
                                      "\"host\":\"n0\","
                                      "\"silent_s\":2,\"limit_s\":2,\"detected_at_s\":7"));
  auto stop = All<SendStop>(hang);
  ASSERT_EQ(stop.size(), 1u);
  EXPECT_THAT(stop[0].nodes, ElementsAre(0, 1)) << "every node is told, the finished one too";

  state_->OnAgentMessage(0, Worker(0, v1::WorkerEvent::STOPPED, 0, SIGTERM), 7.2);
  JobActions end = EndAll(8);
  EXPECT_EQ(ExitCode(end), kExitJobFailed);
  const v1::JobSummary summary = SummaryOf(end);
  EXPECT_EQ(summary.result(), "failed");
  EXPECT_EQ(summary.root_cause().failure_class(), "hang at exit");
  EXPECT_EQ(summary.root_cause().rank(), 0);
  EXPECT_EQ(summary.ranks_succeeded().value(), 1);
  EXPECT_THAT(Printed(end, true), HasSubstr("1 of 2 rank(s) exited 0; the job fails because a "
                                            "rank hung at exit"));
}

TEST_F(JobStateTest, ExitTimeoutOffNeverCallsAHang) {
  JobConfig c = TestJobConfig(1);
  c.progress.exit_timeout_s = 0;
  JobState s(c);
  s.OnStarted({"a"}, 0);
  s.OnRendezvousClosed(Round(1, 2), 1);
  s.OnSessionOpened(0, 100, 1);
  s.OnAgentMessage(0, Worker(1, v1::WorkerEvent::SUCCEEDED), 2);
  EXPECT_FALSE(Has<SendStop>(s.OnHealthCheck(500)));
}

TEST_F(JobStateTest, StallNamesTheRankThatFellBehindFirst) {
  JobConfig c = TestJobConfig(1);
  c.progress.stall_timeout_s = 3;
  JobState s(c);
  s.OnStarted({"a"}, 0);
  s.OnRendezvousClosed(Round(1, 2), 1);
  s.OnSessionOpened(0, 100, 1);
  s.OnAgentMessage(0, Progress(0, 1), 2);
  s.OnAgentMessage(0, Progress(1, 1), 2);
  s.OnAgentMessage(0, Progress(0, 2), 3);   // rank 1 stops at step 1, rank 0 at step 2
  EXPECT_FALSE(Has<SendStop>(s.OnHealthCheck(4.9)));
  JobActions stall = s.OnHealthCheck(5);
  // The suspect is said at once; it is named the root cause once every rank's stacks show
  // which stopped (job_state_stacks_test.cc).
  EXPECT_THAT(Printed(stall, true),
              HasSubstr("[dlaunch] stall: rank 1: no progress for 3.0 s (limit 3.0 s), last step 1"));
  EXPECT_THAT(Events(stall), HasSubstr("\"hang_detected\":{\"failure_class\":\"stall\",\"rank\":1"));
  auto stop = All<SendStop>(stall);
  ASSERT_EQ(stop.size(), 1u);
  EXPECT_THAT(stop[0].dump_ranks, ElementsAre(0, 1)) << "every rank's stacks are recorded";
  auto arm = All<ArmStopDeadline>(stall);
  ASSERT_EQ(arm.size(), 1u);
  EXPECT_DOUBLE_EQ(arm[0].at_s, 5 + 2 + 3 + 5 + 10) << "grace + heartbeats + slack + stack dump";
}

// 2 nodes x 1 rank with a stall limit of 3 s, as long as the heartbeat limit (1 s x 3 misses);
// both ranks report their last progress at t=2.
std::unique_ptr<JobState> TwoRanksLastProgressAt2() {
  JobConfig c = TestJobConfig(2);
  c.progress.stall_timeout_s = 3;
  auto s = std::make_unique<JobState>(c);
  s->OnStarted({"a", "a"}, 0);
  s->OnRendezvousClosed(Round(2, 1), 1);
  s->OnSessionOpened(0, 100, 1);
  s->OnSessionOpened(1, 101, 1);
  s->OnAgentMessage(0, Progress(0, 1), 2);
  s->OnAgentMessage(1, Progress(1, 1), 2);
  return s;
}

TEST_F(JobStateTest, AFrozenNodeIsNamedAsSilentNotAsAStallWhenTheLimitsAreEqual) {
  // Node 1 freezes at t=2: its rank stops, and rank 0 on node 0 stops too, blocked in the next
  // collective; node 0 keeps beating.
  std::unique_ptr<JobState> state = TwoRanksLastProgressAt2();
  JobState& s = *state;
  for (double t = 3; t <= 5; t += 1) {
    s.OnAgentMessage(0, Heartbeat(1), t);
    EXPECT_FALSE(Has<SendStop>(s.OnHealthCheck(t))) << "t=" << t;
  }
  EXPECT_FALSE(Has<SendStop>(s.OnHealthCheck(5.05))) << "a stall would be due here";
  JobActions lost = s.OnTick(5.1);
  EXPECT_THAT(Printed(lost, true), HasSubstr("error: node silent: node 1 (host n1)"));
  EXPECT_THAT(Events(lost), Not(HasSubstr("hang_detected")));
}

TEST_F(JobStateTest, AStallIsStillFoundWhileEveryNodeBeats) {
  std::unique_ptr<JobState> state = TwoRanksLastProgressAt2();
  JobState& s = *state;
  for (double t = 3; t <= 5; t += 1) {
    s.OnAgentMessage(0, Heartbeat(1), t);
    s.OnAgentMessage(1, Heartbeat(1), t);
  }
  EXPECT_THAT(Printed(s.OnHealthCheck(5.05), true), HasSubstr("[dlaunch] stall: rank "));
}

TEST_F(JobStateTest, OutputLinesAreProgressForRanksThatSendNoReports) {
  JobConfig c = TestJobConfig(1);
  c.progress.stall_timeout_s = 3;
  JobState s(c);
  s.OnStarted({"a"}, 0);
  s.OnRendezvousClosed(Round(1, 1), 1);
  s.OnSessionOpened(0, 100, 1);
  for (int t = 2; t <= 10; ++t) {
    v1::AgentMessage hb = Heartbeat(1);
    (*hb.mutable_heartbeat()->mutable_output_lines())[0] = t;   // one new line a second
    s.OnAgentMessage(0, hb, t);
    EXPECT_FALSE(Has<SendStop>(s.OnHealthCheck(t + 0.5))) << "t=" << t;
  }
  v1::AgentMessage same = Heartbeat(1);
  (*same.mutable_heartbeat()->mutable_output_lines())[0] = 10;  // nothing new
  s.OnAgentMessage(0, same, 12);
  EXPECT_TRUE(Has<SendStop>(s.OnHealthCheck(13)));
}


}  // namespace
}  // namespace dlaunch
