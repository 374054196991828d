#include "launcher/job/straggler_score.h"

#include "gtest/gtest.h"
#include "tests/launcher/job/straggler_testing.h"

namespace dlaunch {
namespace {

using straggler_testing::Steps;

StragglerSettings Settings() {
  StragglerSettings s;
  s.threshold = 1.25;
  s.persist = 3;
  s.interval_s = 5;
  s.warmup_steps = 5;
  return s;
}

// Four ranks, two per node (node = rank / 2), each reporting 10 steps per interval; rank
// `slow` takes `factor` times as long per step. Ranks are past warm-up after Start.
class StragglerScoreTest : public ::testing::Test {
 protected:
  void Start() {
    score_.StartRound(0);
    for (int r = 0; r < 4; ++r) score_.OnReport(r, r / 2, Steps(0, 1), 0);
    step_ = 0;
    // One interval at the same pace for all.
    Interval(-1, 1);
  }
  std::vector<StragglerChange> Interval(int slow, double factor, bool timed = false) {
    step_ += 10;
    now_ += 5;
    for (int r = 0; r < 4; ++r) {
      const double per_step = r == slow ? 0.5 * factor : 0.5;
      score_.OnReport(r, r / 2, Steps(step_, 10 * per_step, timed ? 10 * per_step : -1), now_);
    }
    return score_.Evaluate(now_);
  }

  StragglerScore score_{Settings()};
  long step_ = 0;
  double now_ = 0;
};

TEST_F(StragglerScoreTest, ASlowRankIsNamedAfterPersistIntervalsWithItsFigures) {
  Start();
  EXPECT_TRUE(Interval(3, 2).empty());
  EXPECT_TRUE(Interval(3, 2).empty());
  std::vector<StragglerChange> c = Interval(3, 2);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_TRUE(c[0].detected);
  EXPECT_EQ(c[0].node, 1);
  EXPECT_EQ(c[0].rank, 3);
  EXPECT_EQ(c[0].ranks, std::vector<int>{3});
  EXPECT_DOUBLE_EQ(c[0].step_s, 1.0);
  EXPECT_DOUBLE_EQ(c[0].median_s, 0.5);
  EXPECT_DOUBLE_EQ(c[0].ratio, 2.0);
  EXPECT_DOUBLE_EQ(c[0].best_s, 0.5);   // it was as fast as the others before
  EXPECT_DOUBLE_EQ(c[0].since_s, now_);
  EXPECT_TRUE(score_.ranks().at(3).named);
  EXPECT_FALSE(score_.ranks().at(2).named);
  EXPECT_DOUBLE_EQ(score_.NodeScores().at(1), 2.0);
  EXPECT_DOUBLE_EQ(score_.NodeScores().at(0), 1.0);
  EXPECT_TRUE(Interval(3, 2).empty());   // named once
}

TEST_F(StragglerScoreTest, ABriefSlowdownIsNotNamed) {
  Start();
  for (int i = 0; i < 10; ++i) {
    EXPECT_TRUE(Interval(3, 2).empty());
    EXPECT_TRUE(Interval(3, 2).empty());
    EXPECT_TRUE(Interval(-1, 1).empty());   // back before the third: the count starts over
  }
}

TEST_F(StragglerScoreTest, ItClearsAfterPersistFastIntervalsAndCountsTheWait) {
  Start();
  for (int i = 0; i < 5; ++i) Interval(3, 2);   // named at the 3rd; 2 more intervals named
  EXPECT_TRUE(Interval(-1, 1).empty());
  EXPECT_TRUE(Interval(3, 1.2).empty());         // in the band: neither slow nor fast
  EXPECT_TRUE(Interval(-1, 1).empty());
  EXPECT_TRUE(Interval(-1, 1).empty());
  std::vector<StragglerChange> c = Interval(-1, 1);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_FALSE(c[0].detected);
  EXPECT_EQ(c[0].node, 1);
  EXPECT_EQ(c[0].why, "back to the median's pace");
  EXPECT_DOUBLE_EQ(c[0].ratio, 1.0);
  // Two named intervals of 10 s of steps at twice the pace: 5 s each waited; then one of 6 s at
  // 1.2x (1 s beyond the median's pace).
  EXPECT_NEAR(c[0].waited_s, 5 + 5 + 1, 1e-9);
  EXPECT_TRUE(score_.named().empty());
}

TEST_F(StragglerScoreTest, EveryRankSlowerAtOnceIsNoStraggler) {
  Start();
  for (int i = 0; i < 10; ++i) {
    step_ += 10;
    now_ += 5;
    for (int r = 0; r < 4; ++r) score_.OnReport(r, r / 2, Steps(step_, 10 * (i + 1)), now_);
    EXPECT_TRUE(score_.Evaluate(now_).empty());
  }
  EXPECT_DOUBLE_EQ(score_.ranks().at(0).ratio, 1.0);
  EXPECT_DOUBLE_EQ(score_.ranks().at(0).best_s, 0.5);   // its own best: before the slowdown
}

// Three nodes x 2 ranks: every node's local rank 1 on a busier core, 2x its local rank 0 (1.33x
// the median of all six), is compared with the other nodes' local rank 1 and is no straggler; a
// whole node at 1.6x is.
TEST(StragglerScoreLocalRankTest, WhatEveryNodesSecondRankSharesIsNotAStraggler) {
  StragglerScore score(Settings());
  score.StartRound(0);
  for (int r = 0; r < 6; ++r) score.OnReport(r, r / 2, Steps(0, 1), 0);
  long step = 0;
  double now = 0;
  auto interval = [&](int slow_node) {
    step += 10;
    now += 5;
    for (int r = 0; r < 6; ++r) {
      double per_step = r % 2 == 1 ? 1.0 : 0.5;
      if (r / 2 == slow_node) per_step *= 1.6;
      score.OnReport(r, r / 2, Steps(step, 10 * per_step), now);
    }
    return score.Evaluate(now);
  };
  for (int i = 0; i < 6; ++i) EXPECT_TRUE(interval(-1).empty()) << "interval " << i;
  EXPECT_DOUBLE_EQ(score.ranks().at(1).ratio, 1.0);
  EXPECT_DOUBLE_EQ(score.ranks().at(1).median_s, 1.0);
  std::vector<StragglerChange> named;
  for (int i = 0; i < 3; ++i) named = interval(2);
  ASSERT_EQ(named.size(), 1u);
  EXPECT_EQ(named[0].node, 2);
  EXPECT_EQ(named[0].ranks, (std::vector<int>{4, 5}));
  EXPECT_DOUBLE_EQ(named[0].ratio, 1.6);
}

TEST_F(StragglerScoreTest, ARankInAPhaseIsNotScoredForThatInterval) {
  Start();
  for (int i = 0; i < 6; ++i) {
    // Rank 0 evaluates (or checkpoints) every interval while the others train: its slow steps
    // are the phase's, not a straggler's.
    v1::WorkerReport phase;
    phase.set_kind(v1::WorkerReport::PHASE);
    phase.set_phase(i % 2 ? v1::WorkerReport::EVALUATING : v1::WorkerReport::CHECKPOINTING);
    score_.OnReport(0, 0, phase, now_ + 1);
    EXPECT_TRUE(Interval(0, 3).empty());
  }
  EXPECT_FALSE(score_.ranks().at(0).named);
  EXPECT_DOUBLE_EQ(score_.ranks().at(0).ratio, 1.0);   // from before its phases
}

TEST_F(StragglerScoreTest, ANamedPhaseInTheReportsLogPausesTheRank) {
  Start();
  for (int i = 0; i < 6; ++i) {
    step_ += 10;
    now_ += 5;
    for (int r = 0; r < 4; ++r) {
      v1::WorkerReport rep = Steps(step_, r == 1 ? 20 : 5);
      if (r == 1) rep.mutable_phase_log()->add_events()->set_name("eval");
      score_.OnReport(r, r / 2, rep, now_);
    }
    EXPECT_TRUE(score_.Evaluate(now_).empty());
  }
}

TEST_F(StragglerScoreTest, WarmUpStepsAreNotScored) {
  score_.StartRound(0);
  // Rank 2's first steps are slow (compilation, a cold cache): they are its warm-up.
  for (int r = 0; r < 4; ++r) score_.OnReport(r, r / 2, Steps(0, 1), 0);
  for (int i = 1; i <= 5; ++i) {
    for (int r = 0; r < 4; ++r) score_.OnReport(r, r / 2, Steps(i, r == 2 ? 9 : 0.5), i);
    EXPECT_TRUE(score_.Evaluate(i).empty());
  }
  EXPECT_TRUE(score_.ranks().empty());
}

TEST_F(StragglerScoreTest, OwnWorkNamesTheSlowRankWhenEveryRankWaitsForIt) {
  Start();
  // A synchronous job: every rank's wall time per step is the slowest's; only the work differs.
  std::vector<StragglerChange> c;
  for (int i = 0; i < 3; ++i) {
    step_ += 10;
    now_ += 5;
    for (int r = 0; r < 4; ++r) score_.OnReport(r, r / 2, Steps(step_, 10, r == 1 ? 10 : 4), now_);
    c = score_.Evaluate(now_);
  }
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].rank, 1);
  EXPECT_EQ(c[0].node, 0);
  EXPECT_TRUE(c[0].own_work);
  EXPECT_DOUBLE_EQ(c[0].ratio, 2.5);
}

TEST_F(StragglerScoreTest, ANodeIsNamedOnceForSeveralSlowRanksAndClearedWithTheLast) {
  Start();
  std::vector<StragglerChange> c;
  for (int i = 0; i < 3; ++i) {
    step_ += 10;
    now_ += 5;
    for (int r = 0; r < 6; ++r) {
      score_.OnReport(r, r / 2, Steps(step_, r == 2 ? 15 : r == 3 ? 20 : 5), now_);
    }
    c = score_.Evaluate(now_);
  }
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].node, 1);
  EXPECT_EQ(c[0].ranks, (std::vector<int>{2, 3}));
  EXPECT_EQ(c[0].rank, 3);
  EXPECT_DOUBLE_EQ(score_.NodeScores().at(1), 4.0);
}

TEST_F(StragglerScoreTest, ASlowStepLongerThanTheIntervalIsScoredWhenItEnds) {
  Start();
  // Rank 3 reports nothing for two intervals, then one step per 10 s: it is scored on the
  // interval its step ends in, not dropped.
  for (int i = 0; i < 3; ++i) {
    now_ += 5;
    step_ += 10;
    for (int r = 0; r < 3; ++r) score_.OnReport(r, r / 2, Steps(step_, 5), now_);
    if (i == 2) score_.OnReport(3, 1, Steps(11, 15), now_);
    score_.Evaluate(now_);
  }
  EXPECT_DOUBLE_EQ(score_.ranks().at(3).step_s, 15.0);
  EXPECT_DOUBLE_EQ(score_.ranks().at(3).ratio, 30.0);
}

TEST_F(StragglerScoreTest, TheRoundsEndClearsWhatIsNamedAndForgetsTheRanks) {
  Start();
  for (int i = 0; i < 3; ++i) Interval(3, 2);
  std::vector<StragglerChange> c = score_.EndRound(now_);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_FALSE(c[0].detected);
  EXPECT_EQ(c[0].why, "the round ended");
  EXPECT_TRUE(score_.ranks().empty());
  EXPECT_TRUE(score_.named().empty());
}

TEST_F(StragglerScoreTest, ANamedRankThatEndsClearsItsNodeSayingSo) {
  Start();
  for (int i = 0; i < 3; ++i) Interval(3, 2);
  score_.OnRankEnded(3);
  step_ += 10;
  now_ += 5;
  for (int r = 0; r < 3; ++r) score_.OnReport(r, r / 2, Steps(step_, 5), now_);
  std::vector<StragglerChange> c = score_.Evaluate(now_);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_FALSE(c[0].detected);
  EXPECT_EQ(c[0].why, "its ranks ended");
  EXPECT_DOUBLE_EQ(c[0].ratio, 2.0);   // as it was named
}

TEST_F(StragglerScoreTest, OneRankAloneHasNoMedian) {
  StragglerScore s(Settings());
  s.StartRound(0);
  for (int i = 0; i <= 40; ++i) {
    s.OnReport(0, 0, Steps(i * 10, 50), i * 5);
    EXPECT_TRUE(s.Evaluate(i * 5).empty());
  }
}

TEST_F(StragglerScoreTest, DueEveryIntervalAndNeverWhenOff) {
  score_.StartRound(10);
  EXPECT_FALSE(score_.Due(14.9));
  EXPECT_TRUE(score_.Due(15));
  StragglerSettings off = Settings();
  off.enabled = false;
  StragglerScore s(off);
  s.StartRound(0);
  EXPECT_FALSE(s.Due(100));
}

// Scripts without reports: four ranks' CPU counters, each interval of 5 s. Every rank runs
// `run_s` per interval and waits `delay_s` for a CPU; rank `slow`'s delay is `slow_delay_s`.
class CpuStretchTest : public ::testing::Test {
 protected:
  std::vector<StragglerChange> Interval(int slow, double slow_delay_s, double run_s = 2,
                                        double delay_s = 1) {
    now_ += 5;
    for (int r = 0; r < 4; ++r) {
      cpu_[r] += run_s;
      delay_[r] += r == slow ? slow_delay_s : delay_s;
      score_.OnCpuSample(r, r / 2, cpu_[r], delay_[r], now_);
    }
    return score_.Evaluate(now_);
  }

  StragglerScore score_{Settings()};
  double now_ = 0;
  double cpu_[4] = {}, delay_[4] = {};
};

TEST_F(CpuStretchTest, ARankHeldOffItsCpuIsNamedAndClearedWithItsStretch) {
  score_.StartRound(0);
  EXPECT_TRUE(Interval(-1, 0).empty());  // the first counters: a base
  EXPECT_TRUE(Interval(3, 18).empty());  // each rank's first interval: its start-up
  EXPECT_TRUE(Interval(3, 18).empty());
  EXPECT_TRUE(Interval(3, 18).empty());
  std::vector<StragglerChange> c = Interval(3, 18);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_TRUE(c[0].detected);
  EXPECT_TRUE(c[0].cpu_stretch);
  EXPECT_FALSE(c[0].own_work);
  EXPECT_EQ(c[0].node, 1);
  EXPECT_EQ(c[0].rank, 3);
  EXPECT_DOUBLE_EQ(c[0].step_s, 10.0);   // (2 + 18) / 2
  // Against its local rank's on the other node (rank 1's 1.5): the median of two is their mean.
  EXPECT_DOUBLE_EQ(c[0].median_s, (10.0 + 1.5) / 2);
  EXPECT_NEAR(c[0].ratio, 10.0 / 5.75, 1e-9);
  EXPECT_TRUE(Interval(-1, 0).empty());
  EXPECT_TRUE(Interval(-1, 0).empty());
  c = Interval(-1, 0);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_FALSE(c[0].detected);
  EXPECT_EQ(c[0].why, "back to the median's pace");
}

TEST_F(CpuStretchTest, RanksThatShareTheNodesLoadOrSleepAreNotNamed) {
  score_.StartRound(0);
  // All equally starved (a busy machine), then all asleep (waiting for input): nobody.
  for (int i = 0; i < 6; ++i) EXPECT_TRUE(Interval(-1, 0, 1, 4).empty());
  for (int i = 0; i < 6; ++i) EXPECT_TRUE(Interval(-1, 0, 0.001, 0.004).empty());
  EXPECT_TRUE(score_.named().empty());
}

TEST_F(CpuStretchTest, ARankThatMostlySleepsIsNotNamedForAFewWakeUpsDelays) {
  score_.StartRound(0);
  // 0.1 s of CPU per 5 s: rank 3's stretch is 2.5 against its peer's 1.1 (ratio 1.39), but
  // its extra delay, 0.07 s of the 5 s, slows its pace by about 1%: nobody.
  for (int i = 0; i < 6; ++i) EXPECT_TRUE(Interval(3, 0.15, 0.1, 0.01).empty());
  EXPECT_GT(score_.ranks().at(3).ratio, 1.25);
  EXPECT_TRUE(score_.named().empty());
  // The same rank held off its CPU for a quarter of the interval and more: named.
  std::vector<StragglerChange> c;
  for (int i = 0; i < 3 && c.empty(); ++i) c = Interval(3, 3, 0.1, 0.01);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].rank, 3);
}

TEST_F(CpuStretchTest, WhatEveryNodesFirstRankSharesIsNotAStraggler) {
  score_.StartRound(0);
  // Local rank 0 of every node waits three times as long for its CPU (its core is busier):
  // compared with the other nodes' local rank 0, it is not slow.
  for (int i = 0; i < 6; ++i) {
    now_ += 5;
    for (int r = 0; r < 4; ++r) {
      cpu_[r] += 1;
      delay_[r] += r % 2 == 0 ? 6 : 2;
      score_.OnCpuSample(r, r / 2, cpu_[r], delay_[r], now_);
    }
    EXPECT_TRUE(score_.Evaluate(now_).empty());
  }
  EXPECT_EQ(score_.ranks().at(0).ratio, 1.0);
}

// An interval of a synchronous job: every rank reports the same 10 steps in the same 5 s (the
// others wait for the slowest in its collective), and rank 3's threads waited 18 s for a CPU
// (of 2 s run) against the others' 1 s. `timed`: the reports time the step's phases, every
// rank's own work 2 s.
std::vector<StragglerChange> SynchronousInterval(StragglerScore& score, int interval, bool timed,
                                                 double cpu[4], double delay[4]) {
  const double now = 5.0 * interval;
  for (int r = 0; r < 4; ++r) {
    score.OnReport(r, r / 2, Steps(10L * interval, 5, timed ? 2 : -1), now);
    cpu[r] += 2;
    delay[r] += r == 3 ? 18 : 1;
    score.OnCpuSample(r, r / 2, cpu[r], delay[r], now);
  }
  return score.Evaluate(now);
}

TEST_F(CpuStretchTest, UntimedReportsOfASynchronousJobAreJoinedByTheCpuCounters) {
  score_.StartRound(0);
  std::vector<StragglerChange> c;
  for (int i = 0; i < 8 && c.empty(); ++i) c = SynchronousInterval(score_, i, false, cpu_, delay_);
  // The wall times read alike; rank 3's stretch, 10x against its peer's 1.5x, names it.
  ASSERT_EQ(c.size(), 1u);
  EXPECT_TRUE(c[0].detected);
  EXPECT_EQ(c[0].rank, 3);
  EXPECT_EQ(c[0].node, 1);
  EXPECT_TRUE(c[0].cpu_stretch);
  EXPECT_FALSE(c[0].own_work);
  EXPECT_DOUBLE_EQ(c[0].step_s, 10.0);
  for (int r = 0; r < 3; ++r) EXPECT_LT(score_.ranks().at(r).ratio, 1.25) << r;
}

TEST_F(CpuStretchTest, ReportsThatTimeTheirPhasesAreNotOverruledByTheCpuCounters) {
  score_.StartRound(0);
  // The same counters, but the reports time each rank's own work, alike: own work is the
  // measure, and nobody is slow by it.
  for (int i = 0; i < 8; ++i) {
    EXPECT_TRUE(SynchronousInterval(score_, i, true, cpu_, delay_).empty()) << i;
  }
  EXPECT_TRUE(score_.named().empty());
  EXPECT_EQ(score_.ranks().at(3).measure, StragglerMeasure::kSteps);
}

TEST_F(CpuStretchTest, CountersThatGoDownStartOver) {
  score_.StartRound(0);
  Interval(-1, 0);
  Interval(-1, 0);
  // Rank 3 lost a thread and its counters: no negative interval, no stretch from it.
  score_.OnCpuSample(3, 1, 0.5, 0.1, now_);
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(Interval(-1, 0).empty());
}

}  // namespace
}  // namespace dlaunch
