// AgentState: the agent's decisions with synthetic times and no I/O.
#include "agent/core/agent_state.h"

#include <signal.h>
#include <sys/wait.h>

#include <string>

#include "gtest/gtest.h"
#include "tests/testing/agent_actions.h"

namespace dlaunch {
namespace {

using std::chrono::milliseconds;

// An agent with `workers` running, its session open at t=0, heartbeat 1 s, grace 5 s.
AgentState Running(int workers, int heartbeat_ms = 1000) {
  AgentState s(AgentConfig{milliseconds(heartbeat_ms), milliseconds(5000)});
  s.OnSessionOpened(At(0));
  EXPECT_TRUE(s.OnWorkersStarted(workers, 0).empty());
  return s;
}

// A stop of round `round` with this reason and grace, exiting the agent when `exit`.
StopRequest Stop(const std::string& reason, int grace_ms, int round = 0, bool exit = false) {
  return StopRequest{round, exit, reason, milliseconds(grace_ms)};
}

// Drives the agent to exit after its last worker ended; returns the exit code.
int ExitCodeAfterDrain(AgentState& s) {
  AgentActions out = s.OnReportsDrained();
  const ExitAgent* exit = Find<ExitAgent>(out);
  EXPECT_NE(exit, nullptr);
  return exit ? exit->code : -1;
}

// --- ClassifyWorkerExit --------------------------------------------------------------------

TEST(ClassifyWorkerExitTest, ExitZeroSucceedsEvenWhenStopped) {
  EXPECT_EQ(ClassifyWorkerExit(W_EXITCODE(0, 0), false, false), WorkerOutcome::kSucceeded);
  EXPECT_EQ(ClassifyWorkerExit(W_EXITCODE(0, 0), true, true), WorkerOutcome::kSucceeded);
}

TEST(ClassifyWorkerExitTest, NonZeroOrSignalFailsUnlessStopped) {
  EXPECT_EQ(ClassifyWorkerExit(W_EXITCODE(1, 0), false, false), WorkerOutcome::kFailed);
  EXPECT_EQ(ClassifyWorkerExit(W_EXITCODE(0, SIGSEGV), false, false), WorkerOutcome::kFailed);
  EXPECT_EQ(ClassifyWorkerExit(W_EXITCODE(0, SIGTERM), true, false), WorkerOutcome::kStopped);
  EXPECT_EQ(ClassifyWorkerExit(W_EXITCODE(1, 0), false, true), WorkerOutcome::kStopped);
}

// --- workers ending ------------------------------------------------------------------------

TEST(AgentStateTest, AllWorkersSucceedingDrainsReportsThenExitsZero) {
  AgentState s = Running(2);
  AgentActions out = s.OnWorkerExit(Exit(0, W_EXITCODE(0, 0)));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(std::holds_alternative<FlushReports>(out[0]));  // reports before the exit event
  ASSERT_TRUE(std::holds_alternative<SendWorkerExit>(out[1]));
  EXPECT_EQ(std::get<SendWorkerExit>(out[1]).outcome, WorkerOutcome::kSucceeded);
  EXPECT_EQ(std::get<SendWorkerExit>(out[1]).exit.rank, 0);

  out = s.OnWorkerExit(Exit(1, W_EXITCODE(0, 0)));
  EXPECT_EQ(Count<DrainReports>(out), 1);
  EXPECT_EQ(Count<ExitAgent>(out), 0);
  EXPECT_FALSE(s.finished());

  out = s.OnReportsDrained();
  ASSERT_EQ(out.size(), 3u);
  EXPECT_TRUE(std::holds_alternative<FlushReports>(out[0]));
  ASSERT_TRUE(std::holds_alternative<SendRoundEnded>(out[1]));
  EXPECT_EQ(std::get<SendRoundEnded>(out[1]).round, 0);
  ASSERT_TRUE(std::holds_alternative<ExitAgent>(out[2]));
  EXPECT_EQ(std::get<ExitAgent>(out[2]).code, 0);
  EXPECT_TRUE(s.finished());
}

TEST(AgentStateTest, AReportConnectionClosingAsksForAnotherDrainUntilDrained) {
  AgentState s = Running(1);
  EXPECT_EQ(Count<DrainReports>(s.OnWorkerExit(Exit(0, W_EXITCODE(0, 0)))), 1);
  EXPECT_EQ(Count<DrainReports>(s.OnReportConnectionClosed()), 1);
  EXPECT_EQ(ExitCodeAfterDrain(s), 0);
  EXPECT_TRUE(s.OnReportConnectionClosed().empty());  // finished: nothing more
}

TEST(AgentStateTest, AConnectionClosingWhileWorkersRunDoesNotFinish) {
  AgentState s = Running(2);
  s.OnWorkerExit(Exit(0, W_EXITCODE(0, 0)));
  EXPECT_TRUE(s.OnReportConnectionClosed().empty());
}

TEST(AgentStateTest, AFailedWorkerFailsTheNodeButTheAgentWaitsForTheLaunchersStop) {
  AgentState s = Running(2);
  AgentActions out = s.OnWorkerExit(Exit(0, W_EXITCODE(2, 0)));
  const SendWorkerExit* ev = Find<SendWorkerExit>(out);
  ASSERT_NE(ev, nullptr);
  EXPECT_EQ(ev->outcome, WorkerOutcome::kFailed);
  EXPECT_EQ(Count<StopWorkers>(out), 0);  // the launcher decides; it sends stop to every node

  out = s.OnStopCommand(Stop("rank 0 failed", 3000));
  const StopWorkers* stop = Find<StopWorkers>(out);
  ASSERT_NE(stop, nullptr);
  EXPECT_EQ(stop->grace, milliseconds(3000));
  EXPECT_EQ(stop->why, "launcher: rank 0 failed");
  EXPECT_TRUE(stop->first);

  out = s.OnWorkerExit(Exit(1, W_EXITCODE(0, SIGTERM), /*stopped=*/true));
  ev = Find<SendWorkerExit>(out);
  ASSERT_NE(ev, nullptr);
  EXPECT_EQ(ev->outcome, WorkerOutcome::kStopped);
  EXPECT_EQ(ExitCodeAfterDrain(s), 1);
}

TEST(AgentStateTest, WorkersStoppedByTheLauncherDoNotFailTheNode) {
  AgentState s = Running(1);
  s.OnStopCommand(Stop("job finished", 1000));
  s.OnWorkerExit(Exit(0, W_EXITCODE(0, SIGTERM), /*stopped=*/true));
  EXPECT_EQ(ExitCodeAfterDrain(s), 0);
}

TEST(AgentStateTest, AnErrorExitThatRacedTheStopStillFailsTheNode) {
  AgentState s = Running(1);
  s.OnStopCommand(Stop("job finished", 1000));
  // The supervisor had not marked it stopped: it ended on its own.
  AgentActions out = s.OnWorkerExit(Exit(0, W_EXITCODE(4, 0)));
  const SendWorkerExit* ev = Find<SendWorkerExit>(out);
  ASSERT_NE(ev, nullptr);
  EXPECT_EQ(ev->outcome, WorkerOutcome::kStopped);
  EXPECT_EQ(ExitCodeAfterDrain(s), 1);
}

TEST(AgentStateTest, AWorkerThatCouldNotStartStopsTheOthersWithTheGrace) {
  AgentState s(AgentConfig{milliseconds(1000), milliseconds(4000)});
  s.OnSessionOpened(At(0));
  AgentActions out = s.OnWorkersStarted(1, 1);
  const StopWorkers* stop = Find<StopWorkers>(out);
  ASSERT_NE(stop, nullptr);
  EXPECT_EQ(stop->grace, milliseconds(4000));
  EXPECT_EQ(stop->why, "a worker could not start");
  s.OnWorkerExit(Exit(0, W_EXITCODE(0, SIGTERM), true));
  EXPECT_EQ(ExitCodeAfterDrain(s), 1);
}

TEST(AgentStateTest, NoWorkerStartingAtAllFinishesAtOnce) {
  AgentState s(AgentConfig{milliseconds(1000), milliseconds(4000)});
  s.OnSessionOpened(At(0));
  AgentActions out = s.OnWorkersStarted(0, 2);
  EXPECT_EQ(Count<DrainReports>(out), 1);
  EXPECT_EQ(ExitCodeAfterDrain(s), 1);
}

TEST(AgentStateTest, OnlyTheFirstStopIsMarkedFirst) {
  AgentState s = Running(1);
  EXPECT_TRUE(Find<StopWorkers>(s.OnStopCommand(Stop("a", 1000)))->first);
  EXPECT_FALSE(Find<StopWorkers>(s.OnStopCommand(Stop("b", 1000)))->first);
  EXPECT_TRUE(s.stopping());
}

TEST(AgentStateTest, AStopWithNoGraceIsPassedOnAsZero) {
  AgentState s = Running(1);
  AgentActions out = s.OnStopCommand(Stop("interrupted", 0));
  const StopWorkers* stop = Find<StopWorkers>(out);
  ASSERT_NE(stop, nullptr);
  EXPECT_EQ(stop->grace, milliseconds(0));
}

// --- the launcher watchdog -----------------------------------------------------------------

TEST(AgentStateTest, TicksSendHeartbeatsWhileTheSessionIsOpen) {
  AgentState s = Running(1);
  AgentActions out = s.OnTick(At(1000));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<SendHeartbeat>(out[0]));
}

TEST(AgentStateTest, TheSilenceLimitIsThePolicysLease) {
  EXPECT_EQ(Running(1, 250).launcher_silence_limit(), LivenessPolicy::kMinLease);
  EXPECT_EQ(Running(1, 10000).launcher_silence_limit(), milliseconds(30500));
  EXPECT_EQ(Running(1, 10).heartbeat_interval(), LivenessPolicy::kMinHeartbeat);
  AgentConfig five_misses{milliseconds(2000), milliseconds(0)};
  five_misses.heartbeat_misses = 5;
  EXPECT_EQ(AgentState(five_misses).launcher_silence_limit(), milliseconds(10500))
      << "the spec's heartbeat.misses, as the launcher's loss rule counts them";
}

TEST(AgentStateTest, ALauncherSilentPastTheLimitIsLostAndTheWorkersStop) {
  AgentState s = Running(1, 10000);  // limit 30.5 s
  for (int t = 10000; t <= 30000; t += 10000) {
    EXPECT_EQ(Count<StopWorkers>(s.OnTick(At(t))), 0) << t;
  }
  AgentActions out = s.OnTick(At(40000));
  const StopWorkers* stop = Find<StopWorkers>(out);
  ASSERT_NE(stop, nullptr);
  EXPECT_EQ(stop->grace, milliseconds(0)) << "fenced: killed, not stopped with the grace";
  EXPECT_TRUE(stop->fenced);
  EXPECT_NE(stop->why.find("lost the launcher (no word from the launcher for 40 s)"),
            std::string::npos)
      << stop->why;
  EXPECT_EQ(Count<SendHeartbeat>(out), 0);
  EXPECT_FALSE(s.session_open());
  s.OnWorkerExit(Exit(0, W_EXITCODE(0, SIGTERM), true));
  EXPECT_EQ(ExitCodeAfterDrain(s), 1);
}

TEST(AgentStateTest, LauncherMessagesKeepTheWatchdogQuiet) {
  AgentState s = Running(1, 250);
  for (int t = 250; t <= 60000; t += 250) {
    s.OnLauncherMessage(At(t - 100));
    AgentActions out = s.OnTick(At(t));
    ASSERT_EQ(Count<StopWorkers>(out), 0) << t;
    ASSERT_EQ(Count<SendHeartbeat>(out), 1) << t;
  }
}

TEST(AgentStateTest, ShortIntervalsTolerateASecondOfSilenceOnALoadedMachine) {
  AgentState s = Running(1, 250);
  for (int t = 250; t <= 3000; t += 250) {
    ASSERT_EQ(Count<StopWorkers>(s.OnTick(At(t))), 0) << t;  // 3 intervals would be 750 ms
  }
  EXPECT_EQ(Count<StopWorkers>(s.OnTick(At(3250))), 1);
}

TEST(AgentStateTest, ALateTickMeansTheAgentStalledAndDoesNotJudgeTheLauncher) {
  AgentState s = Running(1, 1000);
  s.OnTick(At(1000));
  // The agent's own loop stalled for 9 s: the launcher's pings are queued behind this tick.
  AgentActions out = s.OnTick(At(10000));
  EXPECT_EQ(Count<StopWorkers>(out), 0);
  EXPECT_TRUE(s.session_open());
  s.OnLauncherMessage(At(10001));
  EXPECT_EQ(Count<StopWorkers>(s.OnTick(At(11000))), 0);
  // A launcher that stays silent after the stall is judged once the heartbeat sent after the
  // stall had two intervals to be echoed.
  AgentState t = Running(1, 1000);
  t.OnTick(At(10000));
  EXPECT_EQ(Count<StopWorkers>(t.OnTick(At(11000))), 0);
  EXPECT_EQ(Count<StopWorkers>(t.OnTick(At(12000))), 1);
}

TEST(AgentStateTest, AClosedSessionStopsRunningWorkersOnceWithTheJobsGrace) {
  AgentState s = Running(2, 5000);  // lease 15.5 s: longer than the grace left
  AgentActions out = s.OnSessionClosed("session lost: connection reset", At(500));
  const StopWorkers* stop = Find<StopWorkers>(out);
  ASSERT_NE(stop, nullptr);
  EXPECT_EQ(stop->grace, milliseconds(5000));
  EXPECT_EQ(stop->why, "lost the launcher (session lost: connection reset)");
  EXPECT_TRUE(s.OnSessionClosed("again", At(500)).empty());
  EXPECT_TRUE(s.OnTick(At(1000)).empty());  // no heartbeats on a closed session
}

TEST(AgentStateTest, AClosedSessionsGraceEndsWhenTheLeaseWould) {
  // The launcher counts on a node that did not end its round being gone a lease after the last
  // message it heard; once the session is closed, no echo renews the lease.
  AgentState s = Running(2);  // heartbeat 1 s x 3: lease 3.5 s
  s.OnLauncherMessage(At(1000));
  const AgentActions out = s.OnSessionClosed("stream broke", At(2500));
  const StopWorkers* stop = Find<StopWorkers>(out);
  ASSERT_NE(stop, nullptr);
  EXPECT_EQ(stop->grace, milliseconds(1000 + 3500 - 2500));
  EXPECT_FALSE(stop->fenced);
  AgentState late = Running(2);
  const AgentActions late_out = late.OnSessionClosed("stream broke", At(9000));
  const StopWorkers* now = Find<StopWorkers>(late_out);
  ASSERT_NE(now, nullptr);
  EXPECT_EQ(now->grace, milliseconds(0)) << "the lease ran out already: no grace left";
}

TEST(AgentStateTest, TheLauncherClosingAfterTheWorkersSucceededIsNoFailure) {
  AgentState s = Running(1);
  s.OnWorkerExit(Exit(0, W_EXITCODE(0, 0)));
  EXPECT_EQ(Count<StopWorkers>(s.OnSessionClosed("launcher closed the session", At(500))), 0);
  EXPECT_EQ(ExitCodeAfterDrain(s), 0);
}

// --- signals -------------------------------------------------------------------------------

TEST(AgentStateTest, TheFirstSignalStopsWithTheGraceAndTheSecondKills) {
  AgentState s = Running(1);
  AgentActions out = s.OnSignal(SIGTERM);
  const StopWorkers* stop = Find<StopWorkers>(out);
  ASSERT_NE(stop, nullptr);
  EXPECT_EQ(stop->grace, milliseconds(5000));
  EXPECT_EQ(stop->why, "received signal 15");
  EXPECT_EQ(Count<KillWorkers>(out), 0);

  out = s.OnSignal(SIGINT);
  EXPECT_EQ(Count<KillWorkers>(out), 1);
  EXPECT_EQ(Count<StopWorkers>(out), 0);
  s.OnWorkerExit(Exit(0, W_EXITCODE(0, SIGKILL), true));
  EXPECT_EQ(ExitCodeAfterDrain(s), 1);
}

TEST(AgentStateTest, ASignalWithoutALauncherGraceStillGivesTheWorkersASecond) {
  AgentState s(AgentConfig{milliseconds(1000), milliseconds(0)});
  s.OnSessionOpened(At(0));
  s.OnWorkersStarted(1, 0);
  AgentActions out = s.OnSignal(SIGINT);
  const StopWorkers* stop = Find<StopWorkers>(out);
  ASSERT_NE(stop, nullptr);
  EXPECT_EQ(stop->grace, AgentState::kSignalGrace);
}

TEST(AgentStateTest, ASignalBeforeAnyWorkerStartedExitsAtOnce) {
  AgentState s(AgentConfig{milliseconds(1000), milliseconds(5000)});
  AgentActions out = s.OnSignal(SIGTERM);
  ASSERT_EQ(out.size(), 1u);
  ASSERT_TRUE(std::holds_alternative<ExitAgent>(out[0]));
  EXPECT_EQ(std::get<ExitAgent>(out[0]).code, 1);
  EXPECT_TRUE(s.finished());
}

TEST(AgentStateTest, NothingFinishesBeforeTheWorkersStarted) {
  AgentState s(AgentConfig{milliseconds(1000), milliseconds(5000)});
  s.OnSessionOpened(At(0));
  EXPECT_TRUE(s.OnReportConnectionClosed().empty());
  EXPECT_EQ(Count<StopWorkers>(s.OnStopCommand(Stop("x", 100))), 0);
  EXPECT_FALSE(s.finished());
}

}  // namespace
}  // namespace dlaunch
