// AgentState across restart rounds: starting a round, RoundEnded, stale commands, spares, the
// exit rules of the round contract and the lease (fencing), with synthetic times and no I/O.
#include <signal.h>
#include <sys/wait.h>

#include <string>

#include "agent/core/agent_state.h"
#include "gtest/gtest.h"
#include "tests/testing/agent_actions.h"

namespace dlaunch {
namespace {

using std::chrono::milliseconds;

// Everything the actions hold, in order, each reduced to a word: the sequence is the contract.
std::string Trace(const AgentActions& actions) {
  std::string s;
  for (const AgentAction& a : actions) {
    if (!s.empty()) s += " ";
    std::visit(
        [&s](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, StartWorkers>) s += "start(" + std::to_string(x.round) + ")";
          if constexpr (std::is_same_v<T, HoldStart>) {
            s += "hold(" + std::to_string(x.round) + "," + std::to_string(x.delay.count()) + ")";
          }
          if constexpr (std::is_same_v<T, StopWorkers>) s += "stop";
          if constexpr (std::is_same_v<T, KillWorkers>) s += "kill";
          if constexpr (std::is_same_v<T, SendHeartbeat>) s += "heartbeat";
          if constexpr (std::is_same_v<T, FlushReports>) s += "flush";
          if constexpr (std::is_same_v<T, SendWorkerExit>) s += "exit-event";
          if constexpr (std::is_same_v<T, DrainReports>) s += "drain";
          if constexpr (std::is_same_v<T, SendRoundEnded>) s += "ended(" + std::to_string(x.round) + ")";
          if constexpr (std::is_same_v<T, LogNote>) s += "note";
          if constexpr (std::is_same_v<T, ExitAgent>) s += "exit(" + std::to_string(x.code) + ")";
        },
        a);
  }
  return s;
}

StopRequest Stop(int round, bool exit = false, int grace_ms = 2000) {
  return StopRequest{round, exit, "restart", milliseconds(grace_ms)};
}

AgentConfig Config(int max_restarts, bool spare = false, int heartbeat_ms = 1000) {
  AgentConfig c;
  c.heartbeat_interval = milliseconds(heartbeat_ms);
  c.grace = milliseconds(5000);
  c.max_restarts = max_restarts;
  c.spare = spare;
  return c;
}

// A member of a job with restarts left, its session open at t=0 and `workers` running round 0.
AgentState RunningWithRestarts(int workers, int max_restarts = 3) {
  AgentState s(Config(max_restarts));
  s.OnSessionOpened(At(0));
  EXPECT_TRUE(s.OnWorkersStarted(workers, 0).empty());
  return s;
}

// Ends the round the agent is in: its `workers` exit (stopped by the launcher when `stopped`)
// and their reports drain. Returns what the drain produced.
AgentActions EndRound(AgentState& s, int workers, bool stopped) {
  for (int r = 0; r < workers; ++r) {
    s.OnWorkerExit(Exit(r, stopped ? W_EXITCODE(0, SIGTERM) : W_EXITCODE(0, 0), stopped));
  }
  return s.OnReportsDrained();
}

// --- starting rounds -----------------------------------------------------------------------

TEST(AgentRoundsTest, AMemberStartsItsFirstRoundWhenTheSessionOpens) {
  AgentState s(Config(2));
  EXPECT_EQ(Trace(s.OnSessionOpened(At(0))), "start(0) heartbeat");
  EXPECT_EQ(s.round(), 0);
  EXPECT_FALSE(s.spare());
}

TEST(AgentRoundsTest, ASpareRunsNothingButHeartbeats) {
  AgentState s(Config(2, /*spare=*/true));
  EXPECT_EQ(Trace(s.OnSessionOpened(At(0))), "heartbeat");
  EXPECT_TRUE(s.spare());
  EXPECT_EQ(Trace(s.OnTick(At(1000))), "heartbeat");
  EXPECT_TRUE(s.OnReportConnectionClosed().empty());
  EXPECT_TRUE(s.OnReportsDrained().empty());
  EXPECT_FALSE(s.finished());
}

TEST(AgentRoundsTest, ASpareBecomesAMemberWhenARoundStartsOnIt) {
  AgentState s(Config(2, /*spare=*/true));
  s.OnSessionOpened(At(0));
  EXPECT_EQ(Trace(s.OnStartRound(2)), "start(2)");
  EXPECT_FALSE(s.spare());
  EXPECT_EQ(s.round(), 2);
  s.OnWorkersStarted(1, 0);
  EXPECT_EQ(Trace(EndRound(s, 1, /*stopped=*/true)), "flush ended(2)");
}

TEST(AgentRoundsTest, AfterItsRoundEndedTheAgentWaitsForTheNextRound) {
  AgentState s = RunningWithRestarts(2);
  AgentActions out = s.OnWorkerExit(Exit(0, W_EXITCODE(3, 0)));
  EXPECT_EQ(Find<SendWorkerExit>(out)->outcome, WorkerOutcome::kFailed);
  EXPECT_EQ(Count<StopWorkers>(out), 0);  // the launcher decides, as without restarts
  EXPECT_EQ(Trace(s.OnStopCommand(Stop(0))), "stop");
  EXPECT_EQ(Trace(s.OnWorkerExit(Exit(1, W_EXITCODE(0, SIGTERM), true))),
            "flush exit-event drain");
  EXPECT_EQ(Trace(s.OnReportsDrained()), "flush ended(0)");
  EXPECT_FALSE(s.finished());
  // Still alive between rounds: heartbeats go on, and the lease is watched.
  s.OnLauncherMessage(At(900));
  EXPECT_EQ(Trace(s.OnTick(At(1000))), "heartbeat");
}

TEST(AgentRoundsTest, TheNextRoundStartsWithItsNumberAndAFreshFailureRecord) {
  AgentState s = RunningWithRestarts(1);
  s.OnWorkerExit(Exit(0, W_EXITCODE(1, 0)));  // round 0 failed
  s.OnReportsDrained();
  EXPECT_EQ(Trace(s.OnStartRound(1)), "start(1)");
  EXPECT_EQ(s.round(), 1);
  EXPECT_FALSE(s.stopping());
  EXPECT_TRUE(s.OnWorkersStarted(2, 0).empty());
  // A worker that ends with an error right after a stop of the last round would count as
  // stopped; the new round has no stop yet, so this one fails.
  AgentActions out = s.OnWorkerExit(Exit(0, W_EXITCODE(2, 0)));
  EXPECT_EQ(Find<SendWorkerExit>(out)->outcome, WorkerOutcome::kFailed);
  s.OnWorkerExit(Exit(1, W_EXITCODE(0, 0)));
  EXPECT_EQ(Trace(s.OnReportsDrained()), "flush ended(1)");
}

TEST(AgentRoundsTest, AStartForARoundNotNewerThanTheAgentsIsIgnored) {
  AgentState s = RunningWithRestarts(1);
  EndRound(s, 1, true);
  s.OnStartRound(2);
  s.OnWorkersStarted(1, 0);
  EndRound(s, 1, true);
  for (int stale : {0, 1, 2}) {
    AgentActions out = s.OnStartRound(stale);
    EXPECT_EQ(Trace(out), "note") << stale;
    EXPECT_NE(Find<LogNote>(out)->text.find("this node is in round 2"), std::string::npos);
  }
  EXPECT_EQ(s.round(), 2);
  EXPECT_EQ(Trace(s.OnStartRound(3)), "start(3)");
}

TEST(AgentRoundsTest, AStartWhileTheRoundsWorkersRunIsRefused) {
  AgentState s = RunningWithRestarts(2);
  AgentActions out = s.OnStartRound(1);
  EXPECT_EQ(Trace(out), "note");
  EXPECT_NE(Find<LogNote>(out)->text.find("round 0's workers have not all ended"),
            std::string::npos);
  EXPECT_EQ(s.round(), 0);
  // Also while the ended workers' reports still drain: RoundEnded has not gone up yet.
  s.OnWorkerExit(Exit(0, W_EXITCODE(0, 0)));
  s.OnWorkerExit(Exit(1, W_EXITCODE(0, 0)));
  EXPECT_EQ(Trace(s.OnStartRound(1)), "note");
}

// --- a StartRound sent ahead of its start (StartRound.start_after_ms) ----------------------

// A member whose round 0 was stopped and ended, holding round 1's start for 700 ms.
AgentState HoldingRoundOne() {
  AgentState s = RunningWithRestarts(2);
  s.OnStopCommand(Stop(0));
  EndRound(s, 2, /*stopped=*/true);
  EXPECT_EQ(Trace(s.OnStartRound(1, milliseconds(700))), "hold(1,700)");
  return s;
}

TEST(AgentRoundsTest, AHeldStartRunsTheWorkersOnlyWhenDue) {
  AgentState s = HoldingRoundOne();
  EXPECT_TRUE(s.start_held());
  EXPECT_EQ(s.round(), 1) << "its messages carry the new round at once";
  EXPECT_EQ(s.workers_running(), 0);
  EXPECT_EQ(Trace(s.OnStartRound(1, milliseconds(700))), "note") << "a duplicate is refused";
  EXPECT_EQ(Trace(s.OnHeldStartDue(0)), "") << "another round's timer";
  EXPECT_EQ(Trace(s.OnHeldStartDue(1)), "start(1)");
  EXPECT_FALSE(s.start_held());
  EXPECT_EQ(Trace(s.OnHeldStartDue(1)), "") << "due once";
}

TEST(AgentRoundsTest, AStopBeforeAHeldStartIsDueEndsTheRoundWithNoWorkerRun) {
  AgentState s = HoldingRoundOne();
  EXPECT_EQ(Trace(s.OnStopCommand(Stop(1))), "note ended(1)");
  EXPECT_FALSE(s.start_held());
  EXPECT_EQ(Trace(s.OnHeldStartDue(1)), "") << "the dropped start stays dropped";
  EXPECT_EQ(Trace(s.OnStopCommand(Stop(1))), "ended(1)") << "every stop ends in a RoundEnded";
  EXPECT_EQ(Trace(s.OnStartRound(2)), "start(2)") << "the next round starts as usual";
}

TEST(AgentRoundsTest, AStopForTheOldRoundLeavesAHeldStartAlone) {
  AgentState s = HoldingRoundOne();
  EXPECT_EQ(Trace(s.OnStopCommand(Stop(0))), "note");
  EXPECT_EQ(Trace(s.OnHeldStartDue(1)), "start(1)");
}

TEST(AgentRoundsTest, AnExitStopBeforeAHeldStartIsDueEndsTheAgent) {
  AgentState s = HoldingRoundOne();
  EXPECT_EQ(Trace(s.OnStopCommand(Stop(1, /*exit=*/true))), "note ended(1) exit(0)");
  EXPECT_EQ(Trace(s.OnHeldStartDue(1)), "");
}

TEST(AgentRoundsTest, ALostSessionOrASignalDropsAHeldStart) {
  AgentState closed = HoldingRoundOne();
  EXPECT_EQ(Trace(closed.OnSessionClosed("stream broke", At(500))), "exit(1)");
  EXPECT_EQ(Trace(closed.OnHeldStartDue(1)), "");
  AgentState signalled = HoldingRoundOne();
  EXPECT_EQ(Trace(signalled.OnSignal(SIGTERM)), "exit(1)");
  EXPECT_EQ(Trace(signalled.OnHeldStartDue(1)), "");
}

TEST(AgentRoundsTest, AFencedAgentDropsAHeldStart) {
  AgentState s = HoldingRoundOne();
  // Nothing from the launcher since the session opened at 0: past the lease (5 s) it fences.
  std::string trace;
  for (int t = 1000; t <= 6000; t += 1000) trace += Trace(s.OnTick(At(t))) + " ";
  EXPECT_TRUE(s.fenced());
  EXPECT_NE(trace.find("exit(1)"), std::string::npos) << trace;
  EXPECT_EQ(Trace(s.OnHeldStartDue(1)), "");
}

// --- stops ---------------------------------------------------------------------------------

TEST(AgentRoundsTest, AStopForAnOlderRoundIsIgnored) {
  AgentState s = RunningWithRestarts(1);
  EndRound(s, 1, true);
  s.OnStartRound(1);
  s.OnWorkersStarted(1, 0);
  AgentActions out = s.OnStopCommand(Stop(0, /*exit=*/true));
  EXPECT_EQ(Trace(out), "note");
  EXPECT_NE(Find<LogNote>(out)->text.find("ignored a stop for round 0"), std::string::npos);
  EXPECT_FALSE(s.stopping());
  // One for this round (or a newer one) is obeyed.
  EXPECT_EQ(Trace(s.OnStopCommand(Stop(2))), "stop");
}

TEST(AgentRoundsTest, AStopWithExitEndsTheRoundThenExitsZero) {
  AgentState s = RunningWithRestarts(2);
  EXPECT_EQ(Trace(s.OnStopCommand(Stop(0, /*exit=*/true))), "stop");
  EXPECT_EQ(Trace(EndRound(s, 2, /*stopped=*/true)), "flush ended(0) exit(0)");
  EXPECT_TRUE(s.finished());
}

TEST(AgentRoundsTest, AStopWithExitBetweenRoundsOrOnASpareExitsAtOnce) {
  AgentState s = RunningWithRestarts(1);
  EndRound(s, 1, /*stopped=*/false);
  EXPECT_EQ(Trace(s.OnStopCommand(Stop(0, /*exit=*/true))), "exit(0)");

  AgentState spare(Config(2, /*spare=*/true));
  spare.OnSessionOpened(At(0));
  EXPECT_EQ(Trace(spare.OnStopCommand(Stop(3, /*exit=*/true))), "exit(0)");
  EXPECT_TRUE(spare.finished());
}

TEST(AgentRoundsTest, AStopThatCrossedTheRoundEndedIsAnsweredAgain) {
  AgentState s = RunningWithRestarts(1);
  s.OnWorkerExit(Exit(0, W_EXITCODE(9, 0)));
  EXPECT_EQ(Trace(s.OnReportsDrained()), "flush ended(0)");
  EXPECT_EQ(Trace(s.OnStopCommand(Stop(0))), "ended(0)");
  // A spare has no round to end.
  AgentState spare(Config(2, /*spare=*/true));
  spare.OnSessionOpened(At(0));
  EXPECT_TRUE(spare.OnStopCommand(Stop(0)).empty());
}

TEST(AgentRoundsTest, WithoutRestartsTheAgentExitsWhenItsWorkersEndedAsBefore) {
  AgentState s = RunningWithRestarts(1, /*max_restarts=*/0);
  s.OnWorkerExit(Exit(0, W_EXITCODE(1, 0)));
  EXPECT_EQ(Trace(s.OnReportsDrained()), "flush ended(0) exit(1)");
}

TEST(AgentRoundsTest, WithRestartsAFailedRoundAloneDoesNotFailTheAgentsExit) {
  AgentState s = RunningWithRestarts(1);
  s.OnWorkerExit(Exit(0, W_EXITCODE(1, 0)));
  s.OnReportsDrained();
  s.OnStartRound(1);
  s.OnWorkersStarted(1, 0);
  EndRound(s, 1, /*stopped=*/false);
  EXPECT_EQ(Trace(s.OnStopCommand(Stop(1, /*exit=*/true))), "exit(0)");
}

TEST(AgentRoundsTest, AWorkerThatCouldNotStartEndsTheRoundWithoutExiting) {
  AgentState s(Config(2));
  s.OnSessionOpened(At(0));
  AgentActions out = s.OnWorkersStarted(0, 2);
  EXPECT_EQ(Trace(out), "drain");
  EXPECT_EQ(Trace(s.OnReportsDrained()), "flush ended(0)");
  EXPECT_FALSE(s.finished());
}

TEST(AgentRoundsTest, ALateDrainOfAnEndedRoundChangesNothing) {
  AgentState s = RunningWithRestarts(1);
  EndRound(s, 1, false);
  EXPECT_TRUE(s.OnReportsDrained().empty());
  EXPECT_TRUE(s.OnReportConnectionClosed().empty());
}

// --- the session and signals between rounds ------------------------------------------------

TEST(AgentRoundsTest, ALostSessionBetweenRoundsExitsNonZero) {
  AgentState s = RunningWithRestarts(1);
  EndRound(s, 1, false);
  EXPECT_EQ(Trace(s.OnSessionClosed("launcher gone", At(500))), "exit(1)");
}

TEST(AgentRoundsTest, ALostSessionAfterTheExitOrderIsNoFailure) {
  AgentState s = RunningWithRestarts(1);
  s.OnStopCommand(Stop(0, /*exit=*/true));
  EXPECT_EQ(Count<StopWorkers>(s.OnSessionClosed("launcher finished", At(500))), 0);
  s.OnWorkerExit(Exit(0, W_EXITCODE(0, SIGTERM), true));
  // No RoundEnded: there is no session to carry it.
  EXPECT_EQ(Trace(s.OnReportsDrained()), "flush exit(0)");
}

TEST(AgentRoundsTest, ASignalBetweenRoundsExitsAtOnce) {
  AgentState s = RunningWithRestarts(1);
  EndRound(s, 1, false);
  EXPECT_EQ(Trace(s.OnSignal(SIGTERM)), "exit(1)");
}

TEST(AgentRoundsTest, ASignalWhileTheReportsDrainExitsOnceTheRoundEnded) {
  AgentState s = RunningWithRestarts(1);
  s.OnWorkerExit(Exit(0, W_EXITCODE(0, 0)));
  EXPECT_TRUE(s.OnSignal(SIGTERM).empty());
  EXPECT_EQ(Trace(s.OnReportsDrained()), "flush ended(0) exit(1)");
}

// --- the lease: fencing --------------------------------------------------------------------

// Ticks every interval from `from` to `to` (inclusive) with the launcher silent; returns the
// actions of the tick that fenced, or of the last one.
AgentActions TickSilently(AgentState& s, int from, int to, int interval) {
  AgentActions out;
  for (int t = from; t <= to; t += interval) {
    out = s.OnTick(At(t));
    if (s.fenced()) break;
  }
  return out;
}

TEST(AgentRoundsTest, AFencedAgentKillsItsWorkersAndExitsNonZeroWithoutRoundEnded) {
  AgentState s = RunningWithRestarts(2);
  AgentActions out = TickSilently(s, 1000, 10000, 1000);
  ASSERT_TRUE(s.fenced());
  EXPECT_EQ(Trace(out), "note stop");
  EXPECT_NE(Find<LogNote>(out)->text.find("fenced: no word from the launcher for 4 s"),
            std::string::npos)
      << Find<LogNote>(out)->text;
  // No grace: a rank of a round the job may have left behind has nothing to save.
  EXPECT_EQ(Find<StopWorkers>(out)->grace, milliseconds(0));
  EXPECT_TRUE(Find<StopWorkers>(out)->fenced);
  EXPECT_FALSE(s.session_open());
  // It never takes part in another round, even one offered while its workers stop.
  EXPECT_EQ(Trace(s.OnStartRound(1)), "note");
  EXPECT_EQ(Trace(EndRound(s, 2, /*stopped=*/true)), "flush exit(1)");
}

TEST(AgentRoundsTest, AnAgentWaitingBetweenRoundsIsFencedToo) {
  AgentState s = RunningWithRestarts(1);
  s.OnLauncherMessage(At(2000));
  s.OnTick(At(1000));
  s.OnTick(At(2000));
  EndRound(s, 1, true);
  // Silent since 2 s; the lease of 3.5 s passes at 5.5 s.
  EXPECT_EQ(Count<ExitAgent>(TickSilently(s, 3000, 5000, 1000)), 0);
  AgentActions out = s.OnTick(At(6000));
  EXPECT_TRUE(s.fenced());
  EXPECT_EQ(Trace(out), "note exit(1)");
  EXPECT_TRUE(s.finished());
  EXPECT_TRUE(s.OnTick(At(7000)).empty());
}

TEST(AgentRoundsTest, ASpareIsFencedAfterItsLease) {
  AgentState s(Config(2, /*spare=*/true, /*heartbeat_ms=*/250));
  s.OnSessionOpened(At(0));
  AgentActions out = TickSilently(s, 250, 20000, 250);
  EXPECT_TRUE(s.fenced());
  EXPECT_EQ(Trace(out), "note exit(1)");
  EXPECT_EQ(Find<LogNote>(out)->text.find("fenced: no word from the launcher for 3.25 s"), 0u)
      << Find<LogNote>(out)->text;
}

TEST(AgentRoundsTest, TheLeaseIsThreeIntervalsAndAMarginWhenThatIsLongerThanTheFloors) {
  AgentState s(Config(2, /*spare=*/true, /*heartbeat_ms=*/4000));
  s.OnSessionOpened(At(0));
  EXPECT_EQ(s.launcher_silence_limit(), milliseconds(12500));
  EXPECT_EQ(Count<ExitAgent>(TickSilently(s, 4000, 12000, 4000)), 0);
  EXPECT_EQ(Count<ExitAgent>(s.OnTick(At(16000))), 1);
}

}  // namespace
}  // namespace dlaunch
