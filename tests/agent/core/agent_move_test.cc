// A session that broke moves to the launcher itself (AgentState::OnSessionBroken, docs/relays.md):
// the workers run on while the move is under way, but never past the break + the job's grace
// until the launcher has echoed a message of the new session, because the launcher may have seen
// the old session end and will start the next round once those workers are surely stopped.
#include <string>

#include "agent/core/agent_state.h"
#include "gtest/gtest.h"
#include "tests/testing/agent_actions.h"

namespace dlaunch {
namespace {

using std::chrono::milliseconds;

// Heartbeat 1 s x 3, grace 2 s, workers running, with or without somewhere to move to.
AgentState Running(bool can_move, int max_restarts = 1) {
  AgentConfig c{milliseconds(1000), milliseconds(2000)};
  c.heartbeat_misses = 3;
  c.max_restarts = max_restarts;
  c.can_move = can_move;
  AgentState s(c);
  s.OnSessionOpened(At(0));
  s.OnWorkersStarted(2, 0);
  return s;
}

TEST(AgentMoveTest, ABrokenSessionMovesWithTheWorkersRunning) {
  AgentState s = Running(true);
  AgentActions out = s.OnSessionBroken(At(5000), "session lost: Socket closed");
  EXPECT_EQ(Count<StopWorkers>(out), 0);
  ASSERT_EQ(Count<MoveSession>(out), 1);
  // Half the grace to find the launcher, half for the workers to stop in.
  EXPECT_EQ(Find<MoveSession>(out)->give_up_after, milliseconds(1000));
  EXPECT_TRUE(s.moving());
  EXPECT_TRUE(s.session_open());
  // No heartbeat goes into the broken session; the new one starts with one.
  EXPECT_EQ(Count<SendHeartbeat>(s.OnTick(At(5500))), 0);
  out = s.OnSessionMoved(At(5600));
  EXPECT_EQ(Count<SendHeartbeat>(out), 1);
  // An echo of a message from before the move confirms nothing; one from the new session does.
  s.OnLauncherMessage(At(4000));
  EXPECT_TRUE(s.moving());
  out = s.OnLauncherMessage(At(5600));
  EXPECT_FALSE(s.moving());
  EXPECT_EQ(Count<LogNote>(out), 1);
  // Then it is an ordinary session: the deadline passes without effect, a stop has its grace.
  EXPECT_EQ(Count<StopWorkers>(s.OnMoveDeadline(At(6000))), 0);
  EXPECT_EQ(s.CapGrace(At(6500), milliseconds(2000)), milliseconds(2000));
  EXPECT_EQ(Count<SendHeartbeat>(s.OnTick(At(6600))), 1);
}

TEST(AgentMoveTest, UnconfirmedAtTheDeadlineTheWorkersStopWithinTheGraceFromTheBreak) {
  AgentState s = Running(true);
  s.OnLauncherMessage(At(4900));  // its lease runs to 8.4 s: the grace is what binds
  s.OnSessionBroken(At(5000), "session lost");
  s.OnSessionMoved(At(5300));  // open, but the launcher never answers
  AgentActions out = s.OnMoveDeadline(At(6000));
  ASSERT_EQ(Count<StopWorkers>(out), 1);
  // SIGKILL no later than the break + grace: 7000.
  EXPECT_EQ(Find<StopWorkers>(out)->grace, milliseconds(1000));
  EXPECT_FALSE(s.moving());
  EXPECT_FALSE(s.session_open());
}

TEST(AgentMoveTest, AStopBeforeTheMoveIsConfirmedIsCutToTheGraceLeft) {
  AgentState s = Running(true);
  s.OnSessionBroken(At(5000), "session lost");
  // The launcher had seen the old session end: its first word to the new one is a stop.
  EXPECT_EQ(s.CapGrace(At(5800), milliseconds(2000)), milliseconds(1200));
  EXPECT_EQ(s.CapGrace(At(7500), milliseconds(2000)), milliseconds(0));
}

TEST(AgentMoveTest, AFailedMoveLateInTheLeaseStopsTheWorkersByTheLeasesEnd) {
  AgentState s = Running(true);
  s.OnLauncherMessage(At(2000));  // lease to 5.5 s
  s.OnSessionBroken(At(5000), "session lost");
  AgentActions out = s.OnMoveFailed(At(5100), "connection refused");
  ASSERT_EQ(Count<StopWorkers>(out), 1);
  EXPECT_EQ(Find<StopWorkers>(out)->grace, milliseconds(400)) << "not 1.9 s: no echo can come";
}

TEST(AgentMoveTest, ASignalWhileTheSessionMovesStopsTheWorkersWithinTheGraceLeft) {
  AgentState s = Running(true);
  s.OnSessionBroken(At(5000), "session lost");
  AgentActions out = s.OnSignal(15, At(5500));
  ASSERT_EQ(Count<StopWorkers>(out), 1);
  EXPECT_EQ(Find<StopWorkers>(out)->grace, milliseconds(1500));
}

TEST(AgentMoveTest, AFailedMoveStopsTheWorkersAsABrokenSessionAlwaysDid) {
  AgentState s = Running(true);
  s.OnLauncherMessage(At(4900));  // its lease runs to 8.4 s: the grace is what binds
  s.OnSessionBroken(At(5000), "session lost");
  AgentActions out = s.OnMoveFailed(At(5100), "connection refused");
  ASSERT_EQ(Count<StopWorkers>(out), 1);
  EXPECT_EQ(Find<StopWorkers>(out)->grace, milliseconds(1900));
  EXPECT_FALSE(s.moving());
}

TEST(AgentMoveTest, WithoutAFallbackOrAGraceTheSessionIsNotMoved) {
  AgentState no_fallback = Running(false);
  no_fallback.OnLauncherMessage(At(4900));
  AgentActions out = no_fallback.OnSessionBroken(At(5000), "session lost");
  EXPECT_EQ(Count<MoveSession>(out), 0);
  ASSERT_EQ(Count<StopWorkers>(out), 1);
  EXPECT_EQ(Find<StopWorkers>(out)->grace, milliseconds(2000));

  AgentConfig c{milliseconds(1000), milliseconds(0)};
  c.can_move = true;
  AgentState no_grace(c);
  no_grace.OnSessionOpened(At(0));
  no_grace.OnWorkersStarted(1, 0);
  out = no_grace.OnSessionBroken(At(5000), "session lost");
  EXPECT_EQ(Count<MoveSession>(out), 0);
  EXPECT_EQ(Count<StopWorkers>(out), 1);
}

TEST(AgentMoveTest, ASessionMovesOnceAndASecondBreakEndsIt) {
  AgentState s = Running(true);
  s.OnSessionBroken(At(5000), "session lost");
  s.OnSessionMoved(At(5100));
  s.OnLauncherMessage(At(5100));
  ASSERT_FALSE(s.moving());
  AgentActions out = s.OnSessionBroken(At(9000), "session lost");
  EXPECT_EQ(Count<MoveSession>(out), 0);
  EXPECT_EQ(Count<StopWorkers>(out), 1);
}

TEST(AgentMoveTest, TheLeaseStillFencesAMoveThatTakesTooLong) {
  AgentState s = Running(true);
  s.OnLauncherMessage(At(0));
  s.OnSessionBroken(At(1000), "session lost");
  // No deadline fires (say, the loop was stalled) and no echo comes: the lease (3.5 s) fences.
  AgentActions out;
  for (int t = 2000; t <= 8000 && Count<StopWorkers>(out) == 0; t += 1000) out = s.OnTick(At(t));
  ASSERT_EQ(Count<StopWorkers>(out), 1);
  EXPECT_TRUE(s.fenced());
  EXPECT_EQ(Find<StopWorkers>(out)->grace, milliseconds(0));  // past the break + grace
}

TEST(AgentMoveTest, WorkerExitsAndTheRoundEndGoUpWhileTheSessionMoves) {
  AgentState s = Running(true, 0);
  s.OnSessionBroken(At(5000), "session lost");
  AgentActions out = s.OnWorkerExit(Exit(0, 0));
  EXPECT_EQ(Count<SendWorkerExit>(out), 1);
  out = s.OnWorkerExit(Exit(1, 0));
  out = s.OnReportsDrained();
  // Queued for the new session, which sends them again.
  EXPECT_EQ(Count<SendRoundEnded>(out), 1);
}

}  // namespace
}  // namespace dlaunch
