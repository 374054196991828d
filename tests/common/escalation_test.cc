// Escalation: the one TERM -> grace -> KILL rule, on synthetic time; and its timer driver on a
// ManualTimerClock with a scripted set of processes (no process, no sleeping).
#include "common/escalation.h"

#include <signal.h>

#include <set>

#include "common/escalation_driver.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_agent_clock.h"

namespace dlaunch {
namespace {

using std::chrono::milliseconds;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using Time = Escalation::Time;

const Time t0 = Time(std::chrono::seconds(100));

TEST(EscalationTest, TermFirstThenKillAtTheDeadlineToWhatIsLeft) {
  Escalation e(t0, milliseconds(2000), {milliseconds(10), milliseconds(5000)});
  EscalationStep s = e.Look({41, 42}, t0);
  EXPECT_THAT(s.found, ElementsAre(41, 42));
  EXPECT_THAT(s.term, ElementsAre(41, 42));
  EXPECT_THAT(s.kill, IsEmpty());
  ASSERT_TRUE(s.next);
  EXPECT_EQ(*s.next, t0 + milliseconds(10));
  // 41 ended; 42 ignores SIGTERM: it gets no second one, and no SIGKILL before the deadline.
  s = e.Look({42}, t0 + milliseconds(1995));
  EXPECT_THAT(s.found, IsEmpty());
  EXPECT_THAT(s.term, IsEmpty());
  EXPECT_THAT(s.kill, IsEmpty());
  ASSERT_TRUE(s.next);
  EXPECT_EQ(*s.next, t0 + milliseconds(2000)) << "the next look is at the deadline, not past it";
  s = e.Look({42}, t0 + milliseconds(2000));
  EXPECT_THAT(s.kill, ElementsAre(42));
  ASSERT_TRUE(s.next);
  // Killed once: the looks after only wait for it to end.
  s = e.Look({42}, t0 + milliseconds(2010));
  EXPECT_THAT(s.kill, IsEmpty());
  s = e.Look({}, t0 + milliseconds(2020));
  EXPECT_FALSE(s.next);
  EXPECT_TRUE(e.over());
  EXPECT_THAT(e.gave_up_on(), IsEmpty());
}

TEST(EscalationTest, NothingThereIsOverAtTheFirstLook) {
  Escalation e(t0, milliseconds(2000));
  EscalationStep s = e.Look({}, t0);
  EXPECT_FALSE(s.next);
  EXPECT_TRUE(e.over());
  EXPECT_THAT(e.Look({7}, t0).term, IsEmpty()) << "a look after it is over signals nothing";
}

TEST(EscalationTest, NoGraceKillsAtTheFirstLook) {
  Escalation e(t0, milliseconds(0));
  EscalationStep s = e.Look({5, 6}, t0);
  EXPECT_THAT(s.term, IsEmpty());
  EXPECT_THAT(s.kill, ElementsAre(5, 6));
}

TEST(EscalationTest, AProcessFirstSeenAfterTheDeadlineHasNoGraceLeft) {
  // A daemon's child, adopted once the daemon took its SIGKILL.
  Escalation e(t0, milliseconds(1000));
  e.Look({10}, t0);
  EXPECT_THAT(e.Look({10}, t0 + milliseconds(1000)).kill, ElementsAre(10));
  EscalationStep s = e.Look({11}, t0 + milliseconds(1010));
  EXPECT_THAT(s.found, ElementsAre(11));
  EXPECT_THAT(s.term, IsEmpty());
  EXPECT_THAT(s.kill, ElementsAre(11));
  // One first seen before the deadline gets what is left of the grace, not a grace of its own.
  Escalation f(t0, milliseconds(1000));
  f.Look({20}, t0);
  EXPECT_THAT(f.Look({20, 21}, t0 + milliseconds(900)).term, ElementsAre(21));
  EXPECT_THAT(f.Look({20, 21}, t0 + milliseconds(1000)).kill, ElementsAre(20, 21));
}

TEST(EscalationTest, KillByBringsTheDeadlineForwardButNeverPushesItBack) {
  Escalation e(t0, milliseconds(5000));
  e.Look({1}, t0);
  e.KillBy(t0 + milliseconds(9000));
  EXPECT_EQ(e.kill_at(), t0 + milliseconds(5000));
  e.KillBy(t0 + milliseconds(100));
  EXPECT_EQ(e.kill_at(), t0 + milliseconds(100));
  EXPECT_THAT(e.Look({1}, t0 + milliseconds(100)).kill, ElementsAre(1));
}

TEST(EscalationTest, ItGivesUpAfterTheDeadlineWithWhatIsStillThere) {
  // A process in uninterruptible sleep outlives its SIGKILL; the caller must go on.
  Escalation e(t0, milliseconds(100), {milliseconds(10), milliseconds(500)});
  e.Look({3}, t0);
  e.Look({3}, t0 + milliseconds(100));
  EXPECT_TRUE(e.Look({3}, t0 + milliseconds(590)).next);
  EXPECT_FALSE(e.Look({3}, t0 + milliseconds(600)).next);
  EXPECT_TRUE(e.over());
  EXPECT_THAT(e.gave_up_on(), ElementsAre(3));
}

TEST(EscalationTest, AnEndedPidThatComesBackIsANewProcess) {
  Escalation e(t0, milliseconds(1000));
  e.Look({8, 9}, t0);
  e.Look({9}, t0 + milliseconds(10));
  EXPECT_THAT(e.Look({8, 9}, t0 + milliseconds(20)).found, ElementsAre(8));
}

// A scripted set of processes: SIGKILL ends one at the next look; SIGTERM ends those not deaf.
struct Processes {
  std::set<pid_t> alive;
  std::set<pid_t> deaf;  // ignore SIGTERM
  std::vector<std::pair<pid_t, int>> signals;
  EscalationTarget Target() {
    return {[this] { return std::vector<pid_t>(alive.begin(), alive.end()); },
            [this](const std::vector<pid_t>& pids, int sig) {
              for (pid_t p : pids) {
                signals.push_back({p, sig});
                if (sig == SIGKILL || deaf.count(p) == 0) alive.erase(p);
              }
            },
            /*found=*/nullptr};
  }
};

TEST(TimedEscalationTest, TermNowKillAtTheDeadlineOnTimersThenDone) {
  ManualTimerClock clock;
  Processes procs{{1, 2}, {2}, {}};
  int done = 0;
  TimedEscalation e(clock, procs.Target(), milliseconds(2000), {milliseconds(50), milliseconds(5000)},
                    [&] { ++done; });
  e.Start();
  EXPECT_EQ(procs.signals, (std::vector<std::pair<pid_t, int>>{{1, SIGTERM}, {2, SIGTERM}}));
  EXPECT_EQ(done, 0) << "Start returns at once; the deaf one waits on a timer";
  clock.Advance(milliseconds(1999));
  EXPECT_EQ(procs.signals.size(), 2u);
  EXPECT_EQ(done, 0);
  clock.Advance(milliseconds(1));
  EXPECT_EQ(procs.signals.back(), (std::pair<pid_t, int>{2, SIGKILL}));
  clock.Advance(milliseconds(50));
  EXPECT_EQ(done, 1);
  EXPECT_EQ(clock.pending(), 0);
}

TEST(TimedEscalationTest, HurryKillsNowAndNothingFoundIsDoneAtOnce) {
  ManualTimerClock clock;
  Processes procs{{4}, {4}, {}};
  int done = 0;
  TimedEscalation e(clock, procs.Target(), milliseconds(2000), {}, [&] { ++done; });
  e.Start();
  clock.Advance(milliseconds(100));
  e.Hurry();
  EXPECT_EQ(procs.signals.back(), (std::pair<pid_t, int>{4, SIGKILL}));
  clock.Advance(milliseconds(10));
  EXPECT_EQ(done, 1);

  Processes none;
  int none_done = 0;
  TimedEscalation n(clock, none.Target(), milliseconds(2000), {}, [&] { ++none_done; });
  n.Start();
  EXPECT_EQ(none_done, 1);
  EXPECT_EQ(clock.pending(), 0);
}

}  // namespace
}  // namespace dlaunch
