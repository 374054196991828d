// JobState's restart rounds with synthetic times: stop and wait for the round's end, back-off,
// the next round's places, stale messages, budget, crash loop, exclusion, lost nodes, spares.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "common/exit_codes.h"
#include "launcher/job/job_state.h"
#include "tests/testing/job_actions.h"

namespace dlaunch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

v1::AgentMessage Heartbeat(int round) {
  v1::AgentMessage m;
  m.set_round(round);
  m.mutable_heartbeat()->set_workers_running(0);
  return m;
}

constexpr int kExited0 = 0;

// `nodes` nodes of 2 ranks each (node i: ranks 2i, 2i+1), the round closed and every session
// open at t=1; restarts as configured by the test.
class JobStateRoundsTest : public ::testing::Test {
 protected:
  void Begin(int nodes, RestartSettings restarts, int min_nodes = 1) {
    nodes_ = nodes;
    JobConfig c = TestJobConfig(nodes);
    c.summary_interval_s = 1000;
    c.restarts = restarts;
    c.min_nodes = min_nodes;
    state_ = std::make_unique<JobState>(c);
    state_->OnStarted(std::vector<std::string>(nodes, "dlaunch-agent"), 0);
    RoundResult r;
    for (int i = 0; i < nodes; ++i) {
      r.nodes.push_back(TestNode(i, 2));
      r.assignments.push_back({i, 2 * i, 2});
    }
    r.world_size = 2 * nodes;
    r.master_addr = "10.0.0.0";
    r.master_port = 29500;
    state_->OnRendezvousClosed(r, 1);
    for (int i = 0; i < nodes; ++i) state_->OnSessionOpened(i, 100 + i, 1);
  }
  // Every rank of `nodes` reports `state` in `round`.
  JobActions AllRanks(int round, const std::vector<int>& nodes, v1::WorkerEvent::State state,
                      double t) {
    JobActions out;
    int rank = 0;
    for (int node : nodes) {
      for (int k = 0; k < 2; ++k) Append(out, state_->OnAgentMessage(node, WorkerMessage(round, rank++, state), t));
    }
    return out;
  }
  // Rank `rank` of `node` fails with `code`; every member then ends round `round`.
  JobActions FailAndEnd(int round, int node, int rank, int code, const std::vector<int>& members,
                        double t) {
    JobActions out = state_->OnAgentMessage(node, WorkerMessage(round, rank, v1::WorkerEvent::FAILED, code), t);
    for (int m : members) Append(out, state_->OnAgentMessage(m, RoundEndedMessage(round, 40000 + 10 * round + m), t + 0.1));
    return out;
  }
  JobActions EndAll(const std::vector<int>& nodes, double t) {
    JobActions out;
    for (int i : nodes) Append(out, state_->OnSessionEnded(i, 100 + i, t));
    for (int i = 0; i < nodes_; ++i) Append(out, state_->OnLauncherExited(i, kExited0, {}, t));
    return out;
  }
  int nodes_ = 0;
  std::unique_ptr<JobState> state_;
};

TEST_F(JobStateRoundsTest, AFailureWithBudgetStopsTheRoundAndKeepsTheAgents) {
  Begin(2, {.max_restarts = 2});
  JobActions a = state_->OnAgentMessage(1, WorkerMessage(0, 3, v1::WorkerEvent::FAILED, 3), 4);
  EXPECT_THAT(Printed(a), HasSubstr("[dlaunch] error: worker crash: rank 3 (local 1, node 1, host n1) "
                                    "exited with code 3"));
  auto stop = All<SendStop>(a);
  ASSERT_EQ(stop.size(), 1u);
  EXPECT_THAT(stop[0].nodes, ElementsAre(0, 1));
  EXPECT_EQ(stop[0].round, 0);
  EXPECT_FALSE(stop[0].exit) << "the agents stay for the next round";
  EXPECT_THAT(Events(a), HasSubstr("\"round\":0,\"round_stopping\":"));
  EXPECT_FALSE(ExitCode(a));
  // Nothing starts until every member has ended its round.
  JobActions one = state_->OnAgentMessage(0, RoundEndedMessage(0, 40000), 4.1);
  EXPECT_TRUE(All<SendStartRound>(one).empty());
  // Sessions ending now would be lost nodes, not the job's end: the job is not over.
  EXPECT_FALSE(ExitCode(one));
}

TEST_F(JobStateRoundsTest, TheNextRoundGetsFreshPortsAndTheRestartTimeIsMeasured) {
  Begin(2, {.max_restarts = 2});
  state_->OnAgentMessage(1, WorkerMessage(0, 3, v1::WorkerEvent::FAILED, 3), 4);
  state_->OnAgentMessage(0, RoundEndedMessage(0, 40000), 4.1);
  JobActions a = state_->OnAgentMessage(1, RoundEndedMessage(0, 40001), 4.2);
  EXPECT_THAT(Printed(a), HasSubstr("[dlaunch] restarting: round 1 (restart 1 of 2), 2 node(s)"));
  auto start = All<SendStartRound>(a);
  ASSERT_EQ(start.size(), 1u);
  EXPECT_THAT(start[0].node_ids, ElementsAre(0, 1));
  EXPECT_EQ(start[0].round.round, 1);
  EXPECT_EQ(start[0].round.world_size, 4);
  EXPECT_EQ(start[0].round.master_addr, "10.0.0.0");
  EXPECT_EQ(start[0].round.master_port, 40000) << "node 0's RoundEnded port";
  EXPECT_EQ(start[0].round.assignments[1].rank_offset, 2);
  EXPECT_THAT(Events(a), HasSubstr("\"round\":0,\"restart_decision\":{\"decision\":\"restart\""));
  EXPECT_THAT(Events(a), HasSubstr("\"round\":1,\"round_started\":{\"node_ids\":[0,1]"));

  JobActions started = AllRanks(1, {0, 1}, v1::WorkerEvent::STARTED, 4.5);
  EXPECT_THAT(Printed(started), HasSubstr("[dlaunch] round 1 running: 2 nodes, 4 workers; restart took 0.50 s"));
  EXPECT_THAT(Events(started), HasSubstr("\"restart_s\":0.5,\"nodes\":2}"));
}

TEST_F(JobStateRoundsTest, AFixedMasterPortServesRoundZeroOnly) {
  JobConfig c;
  c.hosts = {"n0"};
  c.restarts.max_restarts = 1;
  c.master_port = 29400;
  JobState s(c);
  s.OnStarted({"dlaunch-agent"}, 0);
  RoundResult r;
  r.nodes.push_back(TestNode(0, 1));
  r.assignments.push_back({0, 0, 1});
  r.world_size = 1;
  s.OnRendezvousClosed(r, 1);
  s.OnSessionOpened(0, 100, 1);
  s.OnAgentMessage(0, WorkerMessage(0, 0, v1::WorkerEvent::FAILED, 1), 2);
  auto start = All<SendStartRound>(s.OnAgentMessage(0, RoundEndedMessage(0, 41000), 2.1));
  ASSERT_EQ(start.size(), 1u);
  EXPECT_EQ(start[0].round.master_port, 41000) << "a taken fixed port must not fail every round";
}

TEST_F(JobStateRoundsTest, MessagesOfAStoppedRoundAreDropped) {
  Begin(2, {.max_restarts = 2});
  FailAndEnd(0, 1, 3, 3, {0, 1}, 4);
  // A late FAILED of round 0 is no failure of round 1.
  JobActions late = state_->OnAgentMessage(0, WorkerMessage(0, 0, v1::WorkerEvent::FAILED, 1), 4.3);
  EXPECT_TRUE(All<SendStop>(late).empty());
  EXPECT_THAT(Events(late), Not(HasSubstr("failure_detected")));
  // A late RoundEnded of round 0 does not end round 1.
  AllRanks(1, {0, 1}, v1::WorkerEvent::STARTED, 4.5);
  JobActions ended = state_->OnAgentMessage(1, RoundEndedMessage(0, 1), 4.6);
  EXPECT_TRUE(ended.empty());
  // Round 1's own failure is seen.
  JobActions fail = state_->OnAgentMessage(1, WorkerMessage(1, 2, v1::WorkerEvent::FAILED, 7), 5);
  EXPECT_THAT(Events(fail), HasSubstr("failure_detected"));
  EXPECT_EQ(All<SendStop>(fail).at(0).round, 1);
}

TEST_F(JobStateRoundsTest, SuccessAfterARestartTellsEveryAgentToExitAndCountsTheRestart) {
  Begin(2, {.max_restarts = 2});
  FailAndEnd(0, 1, 3, 3, {0, 1}, 4);
  AllRanks(1, {0, 1}, v1::WorkerEvent::STARTED, 4.5);
  JobActions done = AllRanks(1, {0, 1}, v1::WorkerEvent::SUCCEEDED, 10);
  auto stop = All<SendStop>(done);
  ASSERT_EQ(stop.size(), 1u);
  EXPECT_TRUE(stop[0].exit);
  EXPECT_THAT(stop[0].nodes, ElementsAre(0, 1));
  JobActions end = EndAll({0, 1}, 11);
  EXPECT_EQ(ExitCode(end), kExitOk);
  EXPECT_THAT(Printed(end), HasSubstr("job job-1 succeeded in 11.00 s: 2 node(s), 4 worker(s), 1 of 2 restart(s) used"));
  auto summary = All<WriteSummary>(end);
  ASSERT_EQ(summary.size(), 1u);
  EXPECT_EQ(summary[0].summary.restarts(), 1);
  EXPECT_EQ(summary[0].summary.max_restarts(), 2);
  EXPECT_EQ(summary[0].summary.rounds(), 2);
}

TEST_F(JobStateRoundsTest, ASpentBudgetEndsTheJobWithTheRootCause) {
  Begin(2, {.max_restarts = 1, .crash_loop_limit = 0, .node_failure_limit = 0});
  FailAndEnd(0, 1, 3, 3, {0, 1}, 4);
  JobActions a = FailAndEnd(1, 0, 1, 5, {0, 1}, 6);
  EXPECT_THAT(Printed(a), HasSubstr("[dlaunch] not restarting: restart budget spent (1 of 1 used)"));
  EXPECT_TRUE(All<SendStartRound>(a).empty());
  auto stops = All<SendStop>(a);
  ASSERT_FALSE(stops.empty());
  EXPECT_TRUE(stops.back().exit);
  EXPECT_THAT(Events(a), HasSubstr("\"decision\":\"give up\",\"reason\":\"restart budget spent (1 of 1 used)\""));
  JobActions end = EndAll({0, 1}, 7);
  EXPECT_EQ(ExitCode(end), kExitJobFailed);
  EXPECT_THAT(Printed(end), HasSubstr("[dlaunch] root cause: worker crash: rank 1 (local 1, node 0, host n0) exited with code 5"));
  EXPECT_THAT(Printed(end), HasSubstr("1 of 1 restart(s) used"));
  EXPECT_EQ(All<WriteSummary>(end).at(0).summary.not_restarted(), "restart budget spent (1 of 1 used)");
}

TEST_F(JobStateRoundsTest, TheSameFailureAgainWithNoNewCheckpointIsACrashLoop) {
  Begin(2, {.max_restarts = 10, .crash_loop_limit = 2, .node_failure_limit = 0});
  FailAndEnd(0, 1, 3, 3, {0, 1}, 4);
  JobActions a = FailAndEnd(1, 1, 3, 3, {0, 1}, 6);
  EXPECT_THAT(Printed(a), HasSubstr("[dlaunch] not restarting: crash loop: the same failure 2 times "
                                    "in a row with no new checkpoint"));
  EXPECT_THAT(Events(a), HasSubstr("\"decision\":\"crash loop\""));
  EXPECT_EQ(ExitCode(EndAll({0, 1}, 7)), kExitJobFailed);
}

TEST_F(JobStateRoundsTest, ANewerCheckpointBetweenFailuresIsNoCrashLoop) {
  Begin(2, {.max_restarts = 10, .crash_loop_limit = 2, .node_failure_limit = 0});
  FailAndEnd(0, 1, 3, 3, {0, 1}, 4);
  v1::AgentMessage hb = Heartbeat(1);
  v1::WorkerReport* r = hb.mutable_heartbeat()->add_reports();
  r->set_rank(0);
  r->set_step(50);
  r->set_checkpoint_step(50);
  state_->OnAgentMessage(0, hb, 5);
  JobActions a = FailAndEnd(1, 1, 3, 3, {0, 1}, 6);
  EXPECT_THAT(Printed(a), HasSubstr("restarting: round 2 (restart 2 of 10)"));
}

TEST_F(JobStateRoundsTest, TheBackOffDelaysTheNextRound) {
  Begin(2, {.max_restarts = 5, .backoff_initial_s = 1.5, .crash_loop_limit = 0});
  JobActions a = FailAndEnd(0, 1, 3, 3, {0, 1}, 4);
  EXPECT_THAT(Printed(a), HasSubstr("restarting: round 1 (restart 1 of 5) in 1.5 s, 2 node(s)"));
  EXPECT_TRUE(All<SendStartRound>(a).empty());
  // Sent kStartLeadS (1 s) ahead, its workers starting when the back-off ends.
  auto arm = All<ArmHealthCheck>(a);
  ASSERT_FALSE(arm.empty());
  EXPECT_DOUBLE_EQ(arm.back().at_s, 4.1 + 1.5 - 1);
  EXPECT_TRUE(All<SendStartRound>(state_->OnHealthCheck(4.5)).empty());
  auto start = All<SendStartRound>(state_->OnHealthCheck(4.6));
  ASSERT_EQ(start.size(), 1u);
  EXPECT_DOUBLE_EQ(start[0].workers_start_at_s, 4.1 + 1.5);
}

TEST_F(JobStateRoundsTest, ConsecutiveFailuresBackOffUnlessTheRoundRanLongEnough) {
  Begin(1, {.max_restarts = 5, .backoff_initial_s = 0, .backoff_max_s = 30, .crash_loop_limit = 0,
            .node_failure_limit = 0});
  FailAndEnd(0, 0, 0, 1, {0}, 2);
  AllRanks(1, {0}, v1::WorkerEvent::STARTED, 3);
  JobActions quick = FailAndEnd(1, 0, 1, 2, {0}, 4);   // ran 1 s: back off
  EXPECT_THAT(Printed(quick), HasSubstr("restarting: round 2 (restart 2 of 5) in 2.0 s"));
  state_->OnHealthCheck(6.1);
  AllRanks(2, {0}, v1::WorkerEvent::STARTED, 7);
  JobActions later = FailAndEnd(2, 0, 0, 3, {0}, 100);  // ran 93 s: healthy, no wait
  EXPECT_THAT(Printed(later), HasSubstr("restarting: round 3 (restart 3 of 5), 1 node(s)"));
}

TEST_F(JobStateRoundsTest, AMemberThatNeverEndsItsRoundIsDroppedAndRanksAreCompacted) {
  Begin(2, {.max_restarts = 2});
  JobActions a = state_->OnAgentMessage(1, WorkerMessage(0, 3, v1::WorkerEvent::FAILED, 3), 4);
  auto arm = All<ArmHealthCheck>(a);
  ASSERT_FALSE(arm.empty());
  EXPECT_DOUBLE_EQ(arm.back().at_s, 4 + 2 + 2);   // grace + slack
  state_->OnAgentMessage(1, RoundEndedMessage(0, 40001), 4.1);
  EXPECT_TRUE(All<SendStartRound>(state_->OnHealthCheck(7.9)).empty());
  JobActions late = state_->OnHealthCheck(8);
  EXPECT_THAT(Events(late), HasSubstr("\"round\":0,\"node_dropped\":{\"node_id\":0"));
  auto exit = All<SendStop>(late);
  ASSERT_EQ(exit.size(), 1u);
  EXPECT_THAT(exit[0].nodes, ElementsAre(0));
  EXPECT_TRUE(exit[0].exit);
  // Node 0 may still run round 0's workers: the next round waits until its lease has surely
  // killed them (last heard at 1 s: 1 + lease 3.5 + the check's 0.25 + a kill's 0.25 = 5 s),
  // long past by the stop's deadline: the round starts at once.
  auto start = All<SendStartRound>(late);
  ASSERT_EQ(start.size(), 1u);
  EXPECT_DOUBLE_EQ(start[0].workers_start_at_s, 8);
  EXPECT_THAT(start[0].node_ids, ElementsAre(1));
  EXPECT_EQ(start[0].round.assignments[0].node_rank, 0);
  EXPECT_EQ(start[0].round.assignments[0].rank_offset, 0);
  EXPECT_EQ(start[0].round.master_addr, "10.0.0.1");
  EXPECT_EQ(start[0].round.master_port, 40001);
  // The dropped node's messages are answered with an order to exit, and ignored.
  JobActions back = state_->OnAgentMessage(0, WorkerMessage(0, 0, v1::WorkerEvent::FAILED, 1), 9);
  EXPECT_THAT(Events(back), Not(HasSubstr("failure_detected")));
}

TEST_F(JobStateRoundsTest, MembersStillEndingTheRoundAreWaitedForPastGraceAndSlack) {
  // Thousands of agents: the stop reaches the last ones seconds after the first, and their
  // RoundEnded arrive past grace + slack. Only a member silent 2 s after the last end is lost.
  Begin(4, {.max_restarts = 2});
  state_->OnAgentMessage(0, WorkerMessage(0, 1, v1::WorkerEvent::FAILED, 3), 4);  // deadline 8
  state_->OnAgentMessage(0, RoundEndedMessage(0, 40000), 6.5);
  state_->OnAgentMessage(1, RoundEndedMessage(0, 40001), 7.5);
  JobActions at_8 = state_->OnHealthCheck(8);
  EXPECT_THAT(Events(at_8), Not(HasSubstr("node_dropped")));
  auto rearm = All<ArmHealthCheck>(at_8);
  ASSERT_FALSE(rearm.empty());
  EXPECT_DOUBLE_EQ(rearm.back().at_s, 9.5);
  state_->OnAgentMessage(2, RoundEndedMessage(0, 40002), 9);
  EXPECT_THAT(Events(state_->OnHealthCheck(10.9)), Not(HasSubstr("node_dropped")));
  const std::string dropped = Events(state_->OnHealthCheck(11));
  EXPECT_THAT(dropped, HasSubstr("\"node_dropped\":{\"node_id\":3"));
  EXPECT_THAT(dropped, Not(HasSubstr("\"node_dropped\":{\"node_id\":2")));
}

TEST_F(JobStateRoundsTest, AMemberLateToOpenItsSessionIsStoppedNotDropped) {
  JobConfig c;
  c.hosts = {"n0", "n1"};
  c.restarts.max_restarts = 1;
  c.stop_grace_s = 2;
  JobState s(c);
  s.OnStarted({"dlaunch-agent", "dlaunch-agent"}, 0);
  RoundResult r;
  r.nodes = {TestNode(0, 1), TestNode(1, 1)};
  r.assignments = {{0, 0, 1}, {1, 1, 1}};
  r.world_size = 2;
  s.OnRendezvousClosed(r, 1);
  s.OnSessionOpened(1, 101, 1);
  s.OnAgentMessage(1, WorkerMessage(0, 1, v1::WorkerEvent::FAILED, 1), 1.1);
  // Node 0 opens its session only now: it hears the round's stop, and the round waits for it.
  JobActions opened = s.OnSessionOpened(0, 100, 1.2);
  auto stop = All<SendStop>(opened);
  ASSERT_EQ(stop.size(), 1u);
  EXPECT_FALSE(stop[0].exit);
  s.OnAgentMessage(1, RoundEndedMessage(0, 40001), 1.3);
  JobActions start = s.OnAgentMessage(0, RoundEndedMessage(0, 40000), 1.4);
  ASSERT_EQ(All<SendStartRound>(start).size(), 1u);
  EXPECT_THAT(All<SendStartRound>(start)[0].node_ids, ElementsAre(0, 1));
}

TEST_F(JobStateRoundsTest, ALostAgentLeavesTheJobWhileNodesMinRemain) {
  Begin(3, {.max_restarts = 2}, /*min_nodes=*/2);
  JobActions a = state_->OnSessionEnded(2, 102, 4);
  EXPECT_THAT(Printed(a), HasSubstr("agent lost: node 2"));
  EXPECT_THAT(All<SendStop>(a).at(0).nodes, ElementsAre(0, 1));
  state_->OnAgentMessage(0, RoundEndedMessage(0, 40000), 4.1);
  JobActions b = state_->OnAgentMessage(1, RoundEndedMessage(0, 40001), 4.2);
  // The lost agent's stream ended at 4: its workers are gone a grace (2 s) + 0.25 s later, or
  // sooner, by its lease from the last message heard at 1 s (1 + 3.5 + 0.25 + 0.25 = 5 s):
  // the round is sent at once (it may be sent 1 s ahead), its workers to start at 5 s.
  EXPECT_THAT(Printed(b), HasSubstr("restarting: round 1 (restart 1 of 2) in 0.8 s, 2 node(s), "
                                    "once the lost nodes' workers are surely stopped"));
  auto start = All<SendStartRound>(b);
  ASSERT_EQ(start.size(), 1u);
  EXPECT_DOUBLE_EQ(start[0].workers_start_at_s, 5);
  ASSERT_EQ(start.size(), 1u);
  EXPECT_THAT(start[0].node_ids, ElementsAre(0, 1));
  EXPECT_EQ(start[0].round.world_size, 4);

  // One more lost: below nodes.min.
  AllRanks(1, {0, 1}, v1::WorkerEvent::STARTED, 7);
  state_->OnSessionEnded(1, 101, 8);
  JobActions c = state_->OnAgentMessage(0, RoundEndedMessage(1, 40010), 8.1);
  EXPECT_THAT(Printed(c), HasSubstr("not restarting: only 1 node(s) left, fewer than nodes.min (2)"));
  EXPECT_EQ(ExitCode(EndAll({0}, 9)), kExitJobFailed);
}

// A flood of joins after the close: room for spares only up to the agents the job started, a
// lost node making room again; refusals said for the first three and every tenfold count.
TEST_F(JobStateRoundsTest, JoinsBeyondTheAgentsStartedAreRefusedAndCounted) {
  Begin(2, {.max_restarts = 2});
  EXPECT_TRUE(state_->HasRoomForSpare(3));
  EXPECT_TRUE(state_->HasRoomForSpare(0)) << "0: the number of agents is not known";
  state_->OnSpareJoined(TestNode(7, 2), 2, 1.5);
  EXPECT_FALSE(state_->HasRoomForSpare(3));
  state_->OnSessionOpened(2, 102, 1.6);
  state_->OnSessionEnded(1, 101, 4);  // node 1 lost: gone once the round has ended
  state_->OnAgentMessage(0, RoundEndedMessage(0, 40000), 4.1);
  EXPECT_TRUE(state_->HasRoomForSpare(3)) << "the lost node's place is free for another agent";

  std::vector<int> said;
  for (int k = 1; k <= 1000; ++k) {
    JobActions a = state_->OnJoinRefused("agent x is one too many");
    if (!a.empty()) {
      said.push_back(k);
      EXPECT_THAT(Printed(a), HasSubstr("[dlaunch] refused a join: agent x is one too many"));
      if (k > 3) {
        EXPECT_THAT(Printed(a), HasSubstr(absl::StrCat("(", k, " refused so far")));
      }
    }
  }
  EXPECT_THAT(said, ElementsAre(1, 2, 3, 10, 100, 1000));
}

TEST_F(JobStateRoundsTest, ASpareTakesALostNodesPlace) {
  Begin(2, {.max_restarts = 2});
  Participant spare = TestNode(7, 2);
  JobActions joined = state_->OnSpareJoined(spare, 2, 1.5);
  EXPECT_THAT(Printed(joined), HasSubstr("spare joined: n7 (10.0.0.7), node 2"));
  EXPECT_THAT(Events(joined), HasSubstr("\"spare_joined\":{\"node_id\":2"));
  state_->OnSessionOpened(2, 102, 1.6);
  // Spares send round-0 heartbeats and are pinged, but are never lost as members.
  state_->OnAgentMessage(2, Heartbeat(0), 3);
  JobActions tick = state_->OnTick(3);
  EXPECT_THAT(All<SendPing>(tick).at(0).nodes, ElementsAre(0, 1, 2));

  state_->OnSessionEnded(1, 101, 4);
  JobActions a = state_->OnAgentMessage(0, RoundEndedMessage(0, 40000), 4.1);
  EXPECT_THAT(Printed(a), HasSubstr("spare node 2 (n7) takes a lost node's place"));
  EXPECT_THAT(Events(a), HasSubstr("\"round\":1,\"spare_promoted\":{\"node_id\":2"));
  // Node 1's stream ended at 4, its last message heard at 1: its lease kills its workers by
  // 1 + 3.5 + 0.25 + 0.25 = 5 s, sooner than the end + grace (2 s) + 0.25 s.
  auto start = All<SendStartRound>(a);
  ASSERT_EQ(start.size(), 1u);
  EXPECT_DOUBLE_EQ(start[0].workers_start_at_s, 5);
  ASSERT_EQ(start.size(), 1u);
  EXPECT_THAT(start[0].node_ids, ElementsAre(0, 2));
  EXPECT_EQ(start[0].round.nodes[1].host, "n7");
  EXPECT_EQ(start[0].round.nodes[1].worker_port, 29507) << "a spare offers its Join port";
  // The promoted spare's messages now count in round 1.
  JobActions started = AllRanks(1, {0, 2}, v1::WorkerEvent::STARTED, 6.9);
  EXPECT_THAT(Printed(started), HasSubstr("round 1 running: 2 nodes, 4 workers; restart took 2.90 s"));
}

TEST_F(JobStateRoundsTest, AnIdleSpareIsToldToExitWhenTheJobEnds) {
  Begin(1, {.max_restarts = 0});
  state_->OnSpareJoined(TestNode(5, 1), 1, 1.5);
  state_->OnSessionOpened(1, 101, 1.6);
  JobActions done = AllRanks(0, {0}, v1::WorkerEvent::SUCCEEDED, 3);
  auto stop = All<SendStop>(done);
  ASSERT_EQ(stop.size(), 1u);
  EXPECT_THAT(stop[0].nodes, ElementsAre(0, 1));
  EXPECT_TRUE(stop[0].exit);
}

TEST_F(JobStateRoundsTest, ASilentSpareIsDroppedWithoutFailingTheJob) {
  Begin(1, {.max_restarts = 1});
  state_->OnSpareJoined(TestNode(5, 1), 1, 1);
  state_->OnSessionOpened(1, 101, 1);
  state_->OnAgentMessage(0, Heartbeat(0), 4.5);
  JobActions tick = state_->OnTick(4.5);
  EXPECT_THAT(Events(tick), HasSubstr("\"round\":0,\"spare_lost\":{\"node_id\":1"));
  EXPECT_THAT(Events(tick), Not(HasSubstr("failure_detected")));
  EXPECT_TRUE(All<SendStop>(tick).size() == 1 && All<SendStop>(tick)[0].exit);
}

TEST_F(JobStateRoundsTest, ANodeThatFailsTwiceIsExcluded) {
  Begin(2, {.max_restarts = 5, .backoff_max_s = 0, .crash_loop_limit = 0, .node_failure_limit = 2});
  FailAndEnd(0, 1, 3, 3, {0, 1}, 4);
  AllRanks(1, {0, 1}, v1::WorkerEvent::STARTED, 5);
  JobActions a = FailAndEnd(1, 1, 2, 4, {0, 1}, 6);
  EXPECT_THAT(Printed(a), HasSubstr("[dlaunch] node 1 (n1) excluded: it failed 2 times"));
  EXPECT_THAT(Events(a), HasSubstr("\"round\":1,\"node_excluded\":{\"node_id\":1"));
  bool told = false;
  for (const SendStop& s : All<SendStop>(a)) told |= s.exit && s.nodes == std::vector<int>{1};
  EXPECT_TRUE(told) << "the excluded node's agent is told to exit";
  auto start = All<SendStartRound>(a);
  ASSERT_EQ(start.size(), 1u);
  EXPECT_THAT(start[0].node_ids, ElementsAre(0));
  EXPECT_EQ(start[0].round.round, 2);
  // Back again: told to exit, never a member.
  state_->OnSessionEnded(1, 101, 7);
  JobActions back = state_->OnSessionOpened(1, 200, 8);
  ASSERT_EQ(All<SendStop>(back).size(), 1u);
  EXPECT_TRUE(All<SendStop>(back)[0].exit);
}

TEST_F(JobStateRoundsTest, ANodeTheJobCannotDoWithoutIsNotExcluded) {
  Begin(1, {.max_restarts = 5, .backoff_max_s = 0, .crash_loop_limit = 3, .node_failure_limit = 2});
  FailAndEnd(0, 0, 0, 4, {0}, 2);
  JobActions second = FailAndEnd(1, 0, 0, 4, {0}, 3);
  EXPECT_THAT(Events(second), HasSubstr("\"round\":1,\"exclusion_skipped\":{\"node_id\":0"));
  EXPECT_THAT(Printed(second), HasSubstr("restarting: round 2 (restart 2 of 5)"));
  // The crash-loop rule ends it instead.
  JobActions third = FailAndEnd(2, 0, 0, 4, {0}, 4);
  EXPECT_THAT(Printed(third), HasSubstr("not restarting: crash loop: the same failure 3 times"));
}

TEST_F(JobStateRoundsTest, WithoutRestartsTheFinalStopTellsAgentsToExit) {
  Begin(2, {.max_restarts = 0});
  JobActions a = state_->OnAgentMessage(1, WorkerMessage(0, 3, v1::WorkerEvent::FAILED, 3), 4);
  auto stop = All<SendStop>(a);
  ASSERT_EQ(stop.size(), 1u);
  EXPECT_TRUE(stop[0].exit);
  EXPECT_THAT(Events(a), Not(HasSubstr("round_stopping")));
}

TEST_F(JobStateRoundsTest, AHangAtExitIsNotRestarted) {
  JobConfig c;
  c.hosts = {"n0"};
  c.restarts.max_restarts = 3;
  c.progress.exit_timeout_s = 5;
  JobState s(c);
  s.OnStarted({"dlaunch-agent"}, 0);
  s.OnRendezvousClosed(OneNodeRound(2), 1);
  s.OnSessionOpened(0, 100, 1);
  s.OnAgentMessage(0, WorkerMessage(0, 0, v1::WorkerEvent::STARTED), 1);
  s.OnAgentMessage(0, WorkerMessage(0, 1, v1::WorkerEvent::STARTED), 1);
  s.OnAgentMessage(0, WorkerMessage(0, 0, v1::WorkerEvent::SUCCEEDED), 2);
  s.OnAgentMessage(0, Heartbeat(0), 7);
  JobActions a = s.OnHealthCheck(7.1);
  EXPECT_THAT(Printed(a), HasSubstr("hang at exit"));
  ASSERT_FALSE(All<SendStop>(a).empty());
  EXPECT_TRUE(All<SendStop>(a)[0].exit);
}

}  // namespace
}  // namespace dlaunch
