// AgentState's in-process restart (docs/restarts.md, "In-process restart"): which ranks a stop
// keeps, the order in which they leave one round and join the next (RoundEnded only once every
// kept rank left its round), and every way back to the respawn path; synthetic times, no I/O.
#include <signal.h>
#include <sys/wait.h>

#include <string>

#include "agent/core/agent_state.h"
#include "gtest/gtest.h"
#include "tests/testing/agent_actions.h"

namespace dlaunch {
namespace {

using std::chrono::milliseconds;

std::string Ranks(const std::vector<int>& ranks) {
  std::string s = "[";
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? "," : "") + std::to_string(ranks[i]);
  return s + "]";
}

// Every action, each reduced to a word with what matters here: the sequence is the contract.
std::string Trace(const AgentActions& actions) {
  std::string s;
  for (const AgentAction& a : actions) {
    if (!s.empty()) s += " ";
    std::visit(
        [&s](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, StartWorkers>) {
            s += "start(" + std::to_string(x.round) + (x.kept.empty() ? "" : ",kept" + Ranks(x.kept)) + ")";
          }
          if constexpr (std::is_same_v<T, HoldStart>) s += "hold";
          if constexpr (std::is_same_v<T, StopWorkers>) {
            s += x.keep.empty() ? "stop" : "stop(keep" + Ranks(x.keep) + ")";
            if (x.fenced) s += "!";
          }
          if constexpr (std::is_same_v<T, SendHeartbeat>) s += "heartbeat";
          if constexpr (std::is_same_v<T, FlushReports>) s += "flush";
          if constexpr (std::is_same_v<T, SendWorkerExit>) s += "exit-event";
          if constexpr (std::is_same_v<T, DrainReports>) s += "drain" + Ranks(x.keep_open);
          if constexpr (std::is_same_v<T, SendRoundEnded>) s += "ended(" + std::to_string(x.round) + ")";
          if constexpr (std::is_same_v<T, LogNote>) s += "note";
          if constexpr (std::is_same_v<T, ExitAgent>) s += "exit(" + std::to_string(x.code) + ")";
          if constexpr (std::is_same_v<T, LeaveRound>) {
            s += "leave(" + std::to_string(x.round) + Ranks(x.local_ranks) + "," +
                 std::to_string(x.within.count()) + ")";
          }
          if constexpr (std::is_same_v<T, RejoinRound>) {
            s += "rejoin(" + std::to_string(x.round) + Ranks(x.local_ranks) + "," +
                 std::to_string(x.within.count()) + ")";
          }
          if constexpr (std::is_same_v<T, EndRanks>) {
            s += "end" + Ranks(x.local_ranks) + "(" + std::to_string(x.grace.count()) + ")";
          }
          if constexpr (std::is_same_v<T, StartRanks>) {
            s += "start-ranks(" + std::to_string(x.round) + Ranks(x.local_ranks) + ")";
          }
          if constexpr (std::is_same_v<T, NoteRankPath>) {
            s += (x.in_process ? "path-in-process(" : "path-respawn(") + std::to_string(x.round) +
                 "," + std::to_string(x.local_rank) + ")";
          }
        },
        a);
  }
  return s;
}

StopRequest Restart(int round, int grace_ms = 2000) {
  return StopRequest{round, false, "rank 5 failed", milliseconds(grace_ms)};
}

// A member of an in_process job (or not) with `workers` running round 0; `hello` of them (local
// ranks 0..hello-1) said they can restart in process.
AgentState Running(int workers, int hello, bool in_process = true) {
  AgentConfig c;
  c.heartbeat_interval = milliseconds(1000);
  c.grace = milliseconds(5000);
  c.max_restarts = 3;
  c.in_process = in_process;
  AgentState s(c);
  s.OnSessionOpened(At(0));
  s.OnWorkersStarted(workers, 0);
  for (int r = 0; r < hello; ++r) EXPECT_TRUE(s.OnRankHello(r, true).empty());
  return s;
}

ChildExit Stopped(int rank) { return Exit(rank, W_EXITCODE(0, SIGTERM), /*stopped=*/true); }

TEST(AgentInProcessTest, RespawnStaysTheDefaultWhateverTheRanksSay) {
  AgentState s = Running(2, 2, /*in_process=*/false);
  EXPECT_EQ(Trace(s.OnStopCommand(Restart(0))), "stop");
}

TEST(AgentInProcessTest, KeptRanksLeaveTheRoundAndTheRoundEndsOnlyOnceTheyLeft) {
  AgentState s = Running(2, 2);
  // Half the grace to leave; nothing is signalled.
  EXPECT_EQ(Trace(s.OnStopCommand(Restart(0))), "leave(0[0,1],1000)");
  EXPECT_TRUE(s.OnRankLeft(0, 0).empty());
  // The last one out: the drain leaves the kept ranks' connections open.
  EXPECT_EQ(Trace(s.OnRankLeft(1, 0)), "drain[0,1]");
  EXPECT_EQ(Trace(s.OnReportsDrained()), "flush ended(0)");
  EXPECT_EQ(s.parked_ranks(), (std::vector<int>{0, 1}));
  EXPECT_EQ(s.workers_running(), 2);
  EXPECT_FALSE(s.finished());
  // The next round starts nothing anew and tells both their place.
  EXPECT_EQ(Trace(s.OnStartRound(1)), "start(1,kept[0,1]) rejoin(1[0,1],2000)");
  EXPECT_TRUE(s.OnWorkersStarted(0, 0).empty());
  EXPECT_EQ(Trace(s.OnRankReady(0, 1)), "path-in-process(1,0)");
  EXPECT_EQ(Trace(s.OnRankReady(1, 1)), "path-in-process(1,1)");
  EXPECT_TRUE(s.OnRejoinDeadline(1).empty());  // everyone answered
  EXPECT_EQ(s.workers_running(), 2);
  // Kept again at the next failure: the hello of a rank lasts as long as its process.
  EXPECT_EQ(Trace(s.OnStopCommand(Restart(1))), "leave(1[0,1],1000)");
}

TEST(AgentInProcessTest, RanksThatCannotAreStoppedAndStartAnewInTheNextRound) {
  // Local rank 0 said it can; rank 1 did not; rank 2 crashed (the failure).
  AgentState s = Running(3, 1);
  EXPECT_EQ(Trace(s.OnWorkerExit(Exit(2, W_EXITCODE(1, 0)))), "flush exit-event");
  EXPECT_EQ(Trace(s.OnStopCommand(Restart(0))), "leave(0[0],1000) stop(keep[0])");
  EXPECT_EQ(Trace(s.OnWorkerExit(Stopped(1))), "flush exit-event");  // rank 0 has not left
  EXPECT_EQ(Trace(s.OnRankLeft(0, 0)), "drain[0]");
  EXPECT_EQ(Trace(s.OnReportsDrained()), "flush ended(0)");
  EXPECT_EQ(Trace(s.OnStartRound(1)),
            "path-respawn(1,1) path-respawn(1,2) start(1,kept[0]) rejoin(1[0],2000)");
}

TEST(AgentInProcessTest, ARankThatDoesNotLeaveInTimeIsEndedWithTheRestOfTheGrace) {
  AgentState s = Running(2, 2);
  s.OnStopCommand(Restart(0, 3000));
  s.OnRankLeft(1, 0);
  EXPECT_EQ(Trace(s.OnLeaveDeadline(0)), "note end[0](1500)");
  EXPECT_EQ(Trace(s.OnRankLeft(0, 0)), "");  // too late: it is being ended
  EXPECT_EQ(Trace(s.OnWorkerExit(Stopped(0))), "flush exit-event drain[1]");
  EXPECT_EQ(Trace(s.OnReportsDrained()), "flush ended(0)");
  EXPECT_EQ(Trace(s.OnStartRound(1)), "path-respawn(1,0) start(1,kept[1]) rejoin(1[1],2000)");
}

TEST(AgentInProcessTest, ARankThatSaysItCannotIsEndedWhenTold) {
  AgentState s = Running(2, 2);
  s.OnStopCommand(Restart(0));
  EXPECT_TRUE(s.OnRankLeft(0, 0).empty());  // rank 1 has not answered
  EXPECT_EQ(Trace(s.OnRankCannot(1, "a NaN in its parameters")), "note end[1](1000)");
  EXPECT_EQ(Trace(s.OnWorkerExit(Stopped(1))), "flush exit-event drain[0]");
  EXPECT_EQ(Trace(s.OnReportsDrained()), "flush ended(0)");
  EXPECT_EQ(Trace(s.OnStartRound(1)), "path-respawn(1,1) start(1,kept[0]) rejoin(1[0],2000)");
}

TEST(AgentInProcessTest, AKeptRankThatDoesNotRejoinInTimeIsKilledAndStartedAnewInTheRound) {
  AgentState s = Running(2, 2);
  s.OnStopCommand(Restart(0));
  s.OnRankLeft(0, 0);
  s.OnRankLeft(1, 0);
  s.OnReportsDrained();
  s.OnStartRound(1);
  s.OnWorkersStarted(0, 0);
  s.OnRankReady(0, 1);
  EXPECT_EQ(Trace(s.OnRejoinDeadline(1)), "note end[1](0)");
  // Its end is no failure of round 1: it starts anew in it, and the journal says why.
  const AgentActions out = s.OnWorkerExit(Exit(1, W_EXITCODE(0, SIGKILL), true));
  EXPECT_EQ(Trace(out), "path-respawn(1,1) start-ranks(1[1])");
  EXPECT_EQ(s.workers_running(), 1);
  EXPECT_TRUE(s.OnWorkersStarted(1, 0).empty());
  EXPECT_EQ(s.workers_running(), 2);
  EXPECT_FALSE(s.stopping());
}

TEST(AgentInProcessTest, ARankThatCannotRejoinIsEndedWithTheGraceAndStartedAnew) {
  AgentState s = Running(1, 1);
  s.OnStopCommand(Restart(0));
  s.OnRankLeft(0, 0);
  s.OnReportsDrained();
  s.OnStartRound(1);
  s.OnWorkersStarted(0, 0);
  EXPECT_EQ(Trace(s.OnRankCannot(0, "CUDA error")), "note end[0](5000)");
  EXPECT_EQ(Trace(s.OnWorkerExit(Stopped(0))), "path-respawn(1,0) start-ranks(1[0])");
}

TEST(AgentInProcessTest, AStopWithoutGraceOrForTheExitKeepsNoRank) {
  AgentState s = Running(2, 2);
  EXPECT_EQ(Trace(s.OnStopCommand(Restart(0, 0))), "stop");
  AgentState t = Running(2, 2);
  EXPECT_EQ(Trace(t.OnStopCommand(StopRequest{0, true, "done", milliseconds(2000)})), "stop");
}

TEST(AgentInProcessTest, TheJobsEndBetweenRoundsEndsTheKeptRanksBeforeTheAgentExits) {
  AgentState s = Running(2, 2);
  s.OnStopCommand(Restart(0));
  s.OnRankLeft(0, 0);
  s.OnRankLeft(1, 0);
  s.OnReportsDrained();
  EXPECT_EQ(Trace(s.OnStopCommand(StopRequest{0, true, "out of restarts", milliseconds(2000)})),
            "stop");
  EXPECT_EQ(Trace(s.OnWorkerExit(Stopped(0))), "flush exit-event");
  EXPECT_EQ(Trace(s.OnWorkerExit(Stopped(1))), "flush exit-event exit(0)");
}

TEST(AgentInProcessTest, AFencedAgentKillsItsKeptRanksToo) {
  AgentState s = Running(1, 1);
  s.OnStopCommand(Restart(0));
  s.OnRankLeft(0, 0);
  s.OnReportsDrained();
  AgentActions out;
  for (int t = 1000; !s.fenced() && t < 60000; t += 1000) out = s.OnTick(At(t));  // no echo
  ASSERT_TRUE(s.fenced());
  ASSERT_NE(Find<StopWorkers>(out), nullptr);
  EXPECT_TRUE(Find<StopWorkers>(out)->fenced);
  EXPECT_TRUE(Find<StopWorkers>(out)->keep.empty());
  EXPECT_EQ(Count<ExitAgent>(out), 0);  // not before the kept rank is gone
  EXPECT_EQ(Count<ExitAgent>(s.OnWorkerExit(Stopped(0))), 1);
}

TEST(AgentInProcessTest, KeptRanksRejoinOnlyWhenAHeldStartIsDue) {
  AgentState s = Running(1, 1);
  s.OnStopCommand(Restart(0));
  s.OnRankLeft(0, 0);
  s.OnReportsDrained();
  EXPECT_EQ(Trace(s.OnStartRound(1, milliseconds(800))), "hold");
  EXPECT_EQ(Trace(s.OnHeldStartDue(1)), "start(1,kept[0]) rejoin(1[0],2000)");
}

TEST(AgentInProcessTest, AStopBeforeAKeptRankIsReadyTellsItToLeaveToo) {
  AgentState s = Running(2, 2);
  s.OnStopCommand(Restart(0));
  s.OnRankLeft(0, 0);
  s.OnRankLeft(1, 0);
  s.OnReportsDrained();
  s.OnStartRound(1);
  s.OnWorkersStarted(0, 0);
  s.OnRankReady(0, 1);
  EXPECT_EQ(Trace(s.OnStopCommand(Restart(1))), "leave(1[0,1],1000)");
  EXPECT_TRUE(s.OnRejoinDeadline(1).empty());  // it is leaving now, not late to join
  s.OnRankLeft(0, 1);
  EXPECT_EQ(Trace(s.OnRankLeft(1, 1)), "drain[0,1]");
}

TEST(AgentInProcessTest, StaleAnswersChangeNothing) {
  AgentState s = Running(1, 1);
  s.OnStopCommand(Restart(0));
  EXPECT_TRUE(s.OnRankLeft(0, 7).empty());  // another round's
  EXPECT_TRUE(s.OnRankReady(0, 0).empty());  // not rejoining
  EXPECT_TRUE(s.OnRejoinDeadline(0).empty());
  EXPECT_EQ(Trace(s.OnRankLeft(0, 0)), "drain[0]");
  EXPECT_TRUE(s.OnLeaveDeadline(0).empty());  // it left in time
}

TEST(AgentInProcessTest, AHelloAfterTheStopDoesNotMakeARankKept) {
  AgentState s = Running(2, 0);
  s.OnStopCommand(Restart(0));
  EXPECT_TRUE(s.OnRankHello(0, true).empty());
  EXPECT_EQ(Trace(s.OnWorkerExit(Stopped(0))), "flush exit-event");
  EXPECT_EQ(Trace(s.OnWorkerExit(Stopped(1))), "flush exit-event drain[]");
}

}  // namespace
}  // namespace dlaunch
