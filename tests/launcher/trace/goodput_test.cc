#include "launcher/trace/goodput_view.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/file_io.h"
#include "launcher/jobdir/journal.h"

namespace dlaunch {
namespace {

using ::testing::HasSubstr;

// Seconds since 10:00:00 as the journal's RFC 3339 time.
std::string At(double s) {
  const int whole = static_cast<int>(s);
  return absl::StrFormat("2026-11-28T10:%02d:%06.3fZ", whole / 60, s - 60 * (whole / 60));
}
int64_t UnixUs(double s) { return 1795860000000000LL + static_cast<int64_t>(std::llround(s * 1e6)); }

std::string Event(double s, int round, const std::string& name, const std::string& fields = "{}") {
  return absl::StrCat("{\"time\":\"", At(s), "\",\"round\":", round, ",\"", name, "\":", fields,
                      "}\n");
}
std::string Report(double s, int round, int rank, int step, double interval_s,
                   int checkpoint_step = 0, double comm_wait_ms = 0) {
  return absl::StrCat("{\"time\":\"", At(s), "\",\"node_id\":", rank, ",\"round\":", round,
                      ",\"report\":{\"kind\":\"STEP\",\"rank\":", rank, ",\"step\":\"", step,
                      "\",\"samples\":\"64\",\"interval_s\":", interval_s,
                      ",\"checkpoint_step\":\"", checkpoint_step,
                      "\",\"timings\":{\"comm_wait_ms\":", comm_wait_ms, "}}}\n");
}
// A step trace with one span between steps, as dlaunch-worker writes it.
std::string TraceSpan(const std::string& name, int step, double at_s, double dur_s) {
  return absl::StrCat("{\"span\":\"", name, "\",\"step\":", step, ",\"ts\":", UnixUs(at_s),
                      ",\"dur\":", static_cast<int64_t>(dur_s * 1e6), ",\"stride\":1}\n");
}

TraceInput Input(const std::string& events, const std::string& metrics) {
  absl::StatusOr<EventJournal> e = ParseEventJournal(events);
  EXPECT_TRUE(e.ok()) << e.status();
  return MakeTraceInput(*std::move(e), ParseMetricJournal(metrics));
}

std::string Started() {
  return Event(0, 0, "journal_opened", "{\"schema_version\":2,\"job_id\":\"j\"}") +
         Event(0, 0, "job_started", "{\"job_id\":\"j\",\"nodes\":2}") +
         Event(1, 0, "rendezvous_closed", "{\"world_size\":2}");
}
std::string Finished(double s, int round, const std::string& result) {
  return Event(s, round, "job_finished", absl::StrCat("{\"result\":\"", result, "\"}"));
}

// Every round's figures and the job's add up to their wall time; the rounds tile the job.
void ExpectAddsUp(const v1::GoodputAccount& a) {
  EXPECT_NEAR(GoodputSum(a.split()), a.wall_s(), 1e-9);
  double rounds = 0;
  for (const v1::RoundGoodput& r : a.rounds()) {
    EXPECT_NEAR(GoodputSum(r.split()), r.wall_s(), 1e-9) << "round " << r.round();
    for (const auto& [name, f] : GoodputFigures(r.split())) {
      EXPECT_GE(f->seconds(), 0) << name;
      EXPECT_NE(f->basis(), v1::BASIS_UNSPECIFIED) << name << " of round " << r.round();
    }
    rounds += r.wall_s();
  }
  EXPECT_NEAR(rounds, a.wall_s(), 1e-9);
}

TEST(GoodputTest, CleanRunSplitsStartupStepsCheckpointsAndTail) {
  std::string metrics;
  for (int rank = 0; rank < 2; ++rank) {
    for (int i = 0; i < 9; ++i) metrics += Report(5 + 2 * i, 0, rank, 10 * (i + 1), 2, 0);
  }
  TraceInput in = Input(Started() + Event(2, 0, "workers_started", "{\"workers\":2}") +
                            Finished(24, 0, "succeeded"),
                        metrics);
  in.rank_steps[0] = ParseStepTrace(TraceSpan("checkpoint", 50, 10, 0.5) +
                                    TraceSpan("evaluate", 70, 15, 1.0));
  const v1::GoodputAccount a = ComputeGoodput(in);
  ExpectAddsUp(a);
  EXPECT_TRUE(a.finished());
  EXPECT_DOUBLE_EQ(a.wall_s(), 24);
  ASSERT_EQ(a.rounds_size(), 1);
  EXPECT_EQ(a.rounds(0).ended_by(), "finished");
  EXPECT_NEAR(a.rounds(0).launch_s(), 2, 1e-9);
  EXPECT_NEAR(a.rounds(0).in_ranks_s(), 1, 1e-9);  // the first report covers from t=3
  EXPECT_NEAR(a.split().startup().seconds(), 3, 1e-9);
  EXPECT_NEAR(a.split().checkpoint().seconds(), 0.5, 1e-9);
  EXPECT_NEAR(a.split().evaluation().seconds(), 1.0, 1e-9);
  EXPECT_NEAR(a.split().productive().seconds(), 21 - 3 - 1.5, 1e-9);
  EXPECT_NEAR(a.split().tail().seconds(), 3, 1e-9);
  EXPECT_EQ(a.split().failure().seconds(), 0);
  EXPECT_EQ(a.split().productive().basis(), v1::MEASURED);
  EXPECT_EQ(a.split().straggler().basis(), v1::NOT_KNOWN);
  EXPECT_NEAR(a.goodput(), 16.5 / 24, 1e-9);
  EXPECT_EQ(a.checkpoint_advice().basis(), v1::NOT_KNOWN);  // no failure to space them by
  EXPECT_THAT(GoodputHeadline(a), HasSubstr("goodput 68.8% of 24.0 s"));
}

// A step trace that timed evaluations but shows no checkpoint: the job wrote none, and the
// advice says what a failure would cost instead of asking for checkpoint lengths.
TEST(GoodputTest, ATracedJobWithoutCheckpointsIsToldItWroteNone) {
  std::string metrics;
  for (int i = 0; i < 9; ++i) metrics += Report(5 + 2 * i, 0, 0, 10 * (i + 1), 2, 0);
  TraceInput in = Input(Started() + Event(2, 0, "workers_started", "{\"workers\":1}") +
                            Finished(24, 0, "succeeded"),
                        metrics);
  in.rank_steps[0] = ParseStepTrace(TraceSpan("evaluate", 70, 15, 1.0));
  const v1::GoodputAccount a = ComputeGoodput(in);
  EXPECT_EQ(a.split().checkpoint().seconds(), 0);
  EXPECT_EQ(a.checkpoint_advice().basis(), v1::NOT_KNOWN);
  EXPECT_THAT(a.checkpoint_advice().note(), HasSubstr("wrote no checkpoint"));

  // Without the step trace nothing says whether it wrote one.
  in.rank_steps.clear();
  EXPECT_THAT(ComputeGoodput(in).checkpoint_advice().note(), HasSubstr("no checkpoint's length"));
}

// Reports without communication waits, and a node named a straggler: the slowest-rank figure
// is the wait the straggler_cleared events carry, a bound taken from productive.
TEST(GoodputTest, TheStragglerScoresWaitIsTheSlowestRankFigureWithoutCommunicationWaits) {
  std::string metrics;
  for (int rank = 0; rank < 2; ++rank) {
    for (int i = 0; i < 9; ++i) metrics += Report(5 + 2 * i, 0, rank, 10 * (i + 1), 2, 0);
  }
  const std::string figures = "{\"node_id\":1,\"rank\":1,\"ratio\":2,\"waited_s\":";
  TraceInput in = Input(Started() + Event(2, 0, "workers_started", "{\"workers\":2}") +
                            Event(8, 0, "straggler_detected", figures + "0}") +
                            Event(16, 0, "straggler_cleared", figures + "4.5}") +
                            Finished(24, 0, "succeeded"),
                        metrics);
  const v1::GoodputAccount a = ComputeGoodput(in);
  ExpectAddsUp(a);
  EXPECT_NEAR(a.split().straggler().seconds(), 4.5, 1e-9);
  EXPECT_EQ(a.split().straggler().basis(), v1::BOUND);
  EXPECT_THAT(a.split().straggler().note(), HasSubstr("straggler score"));
  EXPECT_NEAR(a.split().productive().seconds(), 18 - 4.5, 1e-9);
  EXPECT_EQ(a.split().productive().basis(), v1::BOUND);
}

// One phase event as the agent keeps it (WorkerReport.phase_log), at `at_s` since 10:00.
std::string PhaseEvent(const std::string& name, bool end, double at_s, double seconds = 0) {
  return absl::StrFormat(R"({"name":"%s","end":%s,"unix_s":%.6f,"seconds":%g})", name,
                         end ? "true" : "false", UnixUs(at_s) / 1e6, seconds);
}
// A metrics line of `rank` carrying phase events; a step report when step > 0, else a PHASE one.
std::string PhaseReport(double s, int rank, const std::vector<std::string>& events, int step = 0,
                        double interval_s = 0) {
  const std::string kind =
      step > 0 ? absl::StrCat(R"("kind":"STEP","step":")", step,
                              R"(","samples":"64","interval_s":)", interval_s)
               : std::string(R"("kind":"PHASE")");
  return absl::StrCat("{\"time\":\"", At(s), "\",\"node_id\":", rank, ",\"round\":0,\"report\":{",
                      kind, ",\"rank\":", rank, ",\"phase_log\":{\"events\":[",
                      absl::StrJoin(events, ","), "]}}}\n");
}

// A Python script's phases (the package's phase()), folded by the agent into the reports of
// the next heartbeat: its start-up phase by phase, its checkpoint and evaluation measured.
TEST(GoodputTest, ThePhasesOfAPythonScriptSplitItsStartupCheckpointsAndEvaluations) {
  std::string metrics;
  // Rank 0: import 2.5-5.0, then a plain phase("load") ended by its first steps at t=6.
  metrics += PhaseReport(5.3, 0, {PhaseEvent("import", true, 5.0, 2.5), PhaseEvent("load", false, 5.0)});
  // Rank 1: import 2.5-5.5 and process_group 5.5-6.0, both in its first step report's line.
  metrics += PhaseReport(8, 1, {PhaseEvent("import", true, 5.5, 3.0),
                                PhaseEvent("process_group", false, 5.5),
                                PhaseEvent("process_group", true, 6.0, 0.5)},
                         10, 2);
  metrics += Report(8, 0, 0, 10, 2);
  for (int rank = 0; rank < 2; ++rank) {
    for (int i = 1; i < 7; ++i) {
      const double at = 8 + 2 * i;
      std::vector<std::string> events;
      // Rank 0 writes a 0.8 s checkpoint that ends at 13; both evaluate 16.5-17.0.
      if (rank == 0 && at == 14) events = {PhaseEvent("checkpoint", false, 12.2), PhaseEvent("checkpoint", true, 13, 0.8)};
      if (at == 18) events = {PhaseEvent("eval", true, 17, 0.5)};
      metrics += events.empty() ? Report(at, 0, rank, 10 * (i + 1), 2)
                                : PhaseReport(at, rank, events, 10 * (i + 1), at == 14 ? 1.2 : 1.5);
    }
  }
  const std::string events = Started() + Event(2, 0, "workers_started", "{\"workers\":2}") +
                             Event(2, 0, "worker_started", "{\"rank\":0}") +
                             Event(2, 0, "worker_started", "{\"rank\":1}") +
                             Finished(21, 0, "succeeded");
  const v1::GoodputAccount a = ComputeGoodput(Input(events, metrics));
  ExpectAddsUp(a);
  ASSERT_EQ(a.rounds_size(), 1);
  const v1::RoundGoodput& r = a.rounds(0);
  EXPECT_NEAR(a.split().startup().seconds(), 6, 1e-6);
  EXPECT_NEAR(a.split().checkpoint().seconds(), 0.8, 1e-6);
  EXPECT_EQ(a.split().checkpoint().basis(), v1::MEASURED);
  EXPECT_EQ(a.split().checkpoint().note(), "the ranks' phase reports");
  EXPECT_NEAR(a.split().evaluation().seconds(), 0.5, 1e-6);
  EXPECT_NEAR(a.split().productive().seconds(), 14 - 0.8 - 0.5, 1e-6);
  std::vector<std::string> phases;
  for (const v1::GoodputPhase& p : r.startup_phases()) {
    phases.push_back(absl::StrFormat("%s %.2f x%d", p.name(), p.seconds(), p.ranks()));
  }
  EXPECT_THAT(phases, ::testing::ElementsAre("before the first phase 0.50 x2", "import 3.00 x2",
                                             "load 1.00 x1", "process_group 0.50 x1"));
  // The Young/Daly cost is the phase's length, though the job had no failure to space them by.
  EXPECT_NEAR(a.checkpoint_advice().checkpoint_cost_s(), 0.8, 1e-6);
  EXPECT_EQ(a.checkpoint_advice().basis(), v1::NOT_KNOWN);
  EXPECT_THAT(absl::StrJoin(GoodputReport(a), "\n"),
              HasSubstr("round 0 start-up: launch 2.00 s, then in the ranks (the slowest in each): "
                        "before the first phase 0.50 s, import 3.00 s, load 1.00 s, "
                        "process_group 0.50 s"));
}

// A rank that dies in a phase ends it with its round: the next round's start-up lists only its
// own phases.
TEST(GoodputTest, APhaseARankDiedInEndsWithItsRound) {
  std::string metrics = PhaseReport(3.5, 0, {PhaseEvent("load", false, 3)});
  metrics += PhaseReport(15.2, 0, {PhaseEvent("import", true, 15, 1.5)});
  for (int i = 0; i < 5; ++i) {
    metrics += Report(17 + 2 * i, 1, 0, 10 * (i + 1), 2);
  }
  const std::string events =
      Started() + Event(2, 0, "workers_started") + Event(2, 0, "worker_started", "{\"rank\":0}") +
      Event(10, 0, "worker_failed", "{\"rank\":0,\"exit_code\":-9}") +
      Event(12, 1, "round_started", "{\"world_size\":1}") + Event(13, 1, "workers_started") +
      Event(13, 1, "worker_started", "{\"rank\":0}") + Finished(26, 1, "succeeded");
  const v1::GoodputAccount a = ComputeGoodput(Input(events, metrics));
  ExpectAddsUp(a);
  ASSERT_EQ(a.rounds_size(), 2);
  const auto names = [](const v1::RoundGoodput& r) {
    std::vector<std::string> out;
    for (const v1::GoodputPhase& p : r.startup_phases()) {
      out.push_back(absl::StrFormat("%s %.2f", p.name(), p.seconds()));
    }
    return out;
  };
  // Round 0 has no step: its start-up phases run to its failure.
  EXPECT_THAT(names(a.rounds(0)), ::testing::ElementsAre("before the first phase 1.00", "load 7.00"));
  EXPECT_THAT(names(a.rounds(1)), ::testing::ElementsAre("before the first phase 0.50", "import 1.50"));
}

// The same account without phases: checkpoints and evaluations stay not known, and no start-up
// phase is made up.
TEST(GoodputTest, WithoutPhasesNothingIsSplitThatWasNotReported) {
  std::string metrics;
  for (int rank = 0; rank < 2; ++rank) {
    for (int i = 0; i < 7; ++i) metrics += Report(8 + 2 * i, 0, rank, 10 * (i + 1), 2);
  }
  const v1::GoodputAccount a = ComputeGoodput(Input(
      Started() + Event(2, 0, "workers_started") + Event(2, 0, "worker_started", "{\"rank\":0}") +
          Finished(21, 0, "succeeded"),
      metrics));
  ExpectAddsUp(a);
  EXPECT_EQ(a.split().checkpoint().basis(), v1::NOT_KNOWN);
  EXPECT_EQ(a.split().evaluation().basis(), v1::NOT_KNOWN);
  EXPECT_TRUE(a.rounds(0).startup_phases().empty());
}

TEST(GoodputTest, CrashAndRestartFromACheckpointCountsTheWorkRedone) {
  std::string metrics;
  for (int rank = 0; rank < 2; ++rank) {
    // Round 0: steps 10..60 at t=5..15 (one report per 2 s), a checkpoint at step 50.
    for (int i = 0; i < 6; ++i) metrics += Report(5 + 2 * i, 0, rank, 10 * (i + 1), 2, i >= 4 ? 50 : 0);
    // Round 1 resumed at step 50: step 55 at t=28 (from t=26), 65 at t=30, ... 100 at t=37.
    metrics += Report(28, 1, rank, 55, 2, 50);
    for (int i = 0; i < 4; ++i) metrics += Report(30 + 2 * i, 1, rank, 65 + 10 * i, 2, 50);
    metrics += Report(37, 1, rank, 100, 1, 50);
  }
  const std::string events =
      Started() + Event(2, 0, "workers_started") +
      Event(16, 0, "failure_detected",
            "{\"failure\":{\"failure_class\":\"worker crash\",\"rank\":1}}") +
      Event(17, 0, "round_stopping") + Event(20, 1, "restart", "{\"restarts_used\":1}") +
      Event(22, 1, "round_started", "{\"world_size\":2}") + Event(23, 1, "workers_started") +
      Finished(38, 1, "succeeded");
  TraceInput in = Input(events, metrics);
  in.rank_steps[0] = ParseStepTrace(TraceSpan("checkpoint", 50, 12.5, 0.5) +
                                    TraceSpan("checkpoint", 100, 36.5, 0.25));
  const v1::GoodputAccount a = ComputeGoodput(in);
  ExpectAddsUp(a);
  ASSERT_EQ(a.rounds_size(), 2);
  const v1::RoundGoodput& r0 = a.rounds(0);
  const v1::RoundGoodput& r1 = a.rounds(1);
  EXPECT_EQ(r0.ended_by(), "failure: worker crash");
  EXPECT_NEAR(r0.end_s(), 22, 1e-9);                          // round 1 started at t=22
  EXPECT_NEAR(r0.split().failure().seconds(), 22 - 15, 1e-9);  // last step to the next round
  EXPECT_NEAR(r0.split().productive().seconds(), 15 - 3 - 0.5, 1e-9);
  EXPECT_EQ(r1.resumed_at_step(), 50);
  EXPECT_EQ(r1.redone_steps(), 10);
  // Step 60 was passed again half way through the report of steps 56..65 (t=28..30).
  EXPECT_NEAR(r1.split().redone().seconds(), 29 - 26, 1e-9);
  EXPECT_NEAR(r1.split().failure().seconds(), 26 - 22, 1e-9);  // the restart's start-up
  EXPECT_EQ(r1.split().startup().seconds(), 0);
  EXPECT_NEAR(r1.split().productive().seconds(), 37 - 29 - 0.25, 1e-9);
  EXPECT_NEAR(r1.split().tail().seconds(), 1, 1e-9);
  EXPECT_NEAR(a.split().failure().seconds(), 11, 1e-9);
  EXPECT_NEAR(a.split().redone().seconds(), 3, 1e-9);
  // Young/Daly from this job: mean checkpoint 0.375 s, one failure in 38 s.
  const v1::CheckpointAdvice& c = a.checkpoint_advice();
  EXPECT_EQ(c.basis(), v1::MEASURED);
  EXPECT_EQ(c.failures(), 1);
  EXPECT_NEAR(c.checkpoint_cost_s(), 0.375, 1e-9);
  EXPECT_NEAR(c.optimal_interval_s(), std::sqrt(2 * 0.375 * 38), 1e-9);
  EXPECT_EQ(c.used_interval_steps(), 50);
  // The trace draws the same stretches on the launcher's goodput track.
  const TraceParts parts = BuildTraceParts(in);
  int goodput_spans = 0;
  for (const TraceEvent& e : parts.fixed) {
    if (e.cat != "goodput") continue;
    ++goodput_spans;
    EXPECT_EQ(e.pid, kLauncherPid);
    EXPECT_EQ(e.tid, kGoodputTid);
    if (e.name == "redone") {
      EXPECT_EQ(e.ts_us - (UnixUs(0) - parts.origin_unix_us), 26000000);
      EXPECT_EQ(e.dur_us, 3000000);
      EXPECT_THAT(e.args_json, HasSubstr("\"steps\":10"));
    }
  }
  // Round 0: start-up, training, detection, stop and wait; round 1: restart start-up, redone,
  // training, tail.
  EXPECT_EQ(goodput_spans, 8);
  const std::string report = absl::StrJoin(GoodputReport(a), "\n");
  EXPECT_THAT(report, HasSubstr("round 1: 22.0-38.0 s, finished, steps 55-100, resumed at 50, "
                                "10 step(s) redone (3.0 s)"));
  EXPECT_THAT(report, HasSubstr("Young/Daly"));
}

// The agent folds a rank's reports between heartbeats: a restarted round's first line can be
// past the step reached before the failure, and still hold the steps run again.
TEST(GoodputTest, RedoneWorkInsideAFoldedFirstReport) {
  std::string metrics;
  for (int rank = 0; rank < 2; ++rank) {
    metrics += Report(5, 0, rank, 5, 2, 5) + Report(7, 0, rank, 8, 2, 5);
    metrics += Report(30, 1, rank, 12, 7, 10);  // steps 6..12 over t=23..30
  }
  const std::string events = Started() + Event(2, 0, "workers_started") +
                             Event(8, 0, "worker_failed", "{\"rank\":1,\"exit_code\":-1}") +
                             Event(20, 1, "round_started") + Finished(31, 1, "succeeded");
  const v1::GoodputAccount a = ComputeGoodput(Input(events, metrics));
  ExpectAddsUp(a);
  ASSERT_EQ(a.rounds_size(), 2);
  EXPECT_EQ(a.rounds(1).resumed_at_step(), 5);  // not the checkpoint of step 10 the line names
  EXPECT_EQ(a.rounds(1).redone_steps(), 3);
  EXPECT_NEAR(a.rounds(1).split().redone().seconds(), 3, 1e-9);  // 3 of the line's 7 steps
  EXPECT_NEAR(a.rounds(1).split().productive().seconds(), 4, 1e-9);
}

TEST(GoodputTest, AStallIsFailureFromTheLastStepToTheEnd) {
  std::string metrics;
  for (int rank = 0; rank < 2; ++rank) {
    for (int i = 0; i < 4; ++i) metrics += Report(5 + 2 * i, 0, rank, 10 * (i + 1), 2, 0, 10 + 90 * rank);
  }
  const std::string events =
      Started() + Event(2, 0, "workers_started") +
      Event(40, 0, "hang_detected", "{\"failure_class\":\"stall\",\"rank\":1,\"silent_s\":29}") +
      Event(40, 0, "stop_requested", "{\"reason\":\"stall\"}") + Finished(42, 0, "failed");
  const v1::GoodputAccount a = ComputeGoodput(Input(events, metrics));
  ExpectAddsUp(a);
  ASSERT_EQ(a.rounds_size(), 1);
  EXPECT_EQ(a.rounds(0).ended_by(), "failure: stall");
  EXPECT_NEAR(a.split().failure().seconds(), 42 - 11, 1e-9);
  EXPECT_EQ(a.split().tail().seconds(), 0);
  // Rank 0 waited 0.36 s more than rank 1 in communication: the bound on the slowest rank.
  EXPECT_EQ(a.split().straggler().basis(), v1::BOUND);
  EXPECT_NEAR(a.split().straggler().seconds(), 4 * 0.09, 1e-9);
  EXPECT_EQ(a.split().productive().basis(), v1::BOUND);
  EXPECT_NEAR(a.split().productive().seconds(), 8 - 0.36, 1e-9);
  bool detection = false;
  for (const v1::GoodputSpan& s : a.rounds(0).spans()) {
    if (s.name() != "detection") continue;
    detection = true;
    EXPECT_NEAR(s.begin_s(), 11, 1e-9);
    EXPECT_NEAR(s.end_s(), 40, 1e-9);
  }
  EXPECT_TRUE(detection);
}

TEST(GoodputTest, AScriptWithoutReportsSaysWhatIsNotKnown) {
  const std::string events = Started() + Event(2, 0, "workers_started") +
                             Event(30, 0, "worker_ended", "{\"rank\":0,\"state\":\"succeeded\"}") +
                             Finished(31, 0, "succeeded");
  const v1::GoodputAccount a = ComputeGoodput(Input(events, ""));
  ExpectAddsUp(a);
  EXPECT_NEAR(a.split().startup().seconds(), 2, 1e-9);
  EXPECT_EQ(a.split().not_split().basis(), v1::NOT_KNOWN);
  EXPECT_NEAR(a.split().not_split().seconds(), 28, 1e-9);
  EXPECT_EQ(a.split().productive().basis(), v1::NOT_KNOWN);
  EXPECT_NEAR(a.split().tail().seconds(), 1, 1e-9);
  EXPECT_EQ(a.goodput(), 0);
  EXPECT_THAT(GoodputHeadline(a), HasSubstr("goodput not known of 31.0 s (the job's ranks sent "
                                            "no step reports): start-up 2.0 s"));
  EXPECT_THAT(absl::StrJoin(GoodputReport(a), "\n"), HasSubstr("not split"));
}

TEST(GoodputTest, AJournalWithoutItsEndEndsAtTheLastRecord) {
  const v1::GoodputAccount a = ComputeGoodput(
      Input(Started() + Event(2, 0, "workers_started"), Report(9, 0, 0, 10, 2)));
  ExpectAddsUp(a);
  EXPECT_FALSE(a.finished());
  EXPECT_DOUBLE_EQ(a.wall_s(), 9);
  EXPECT_EQ(a.rounds(0).ended_by(), "running");
  EXPECT_THAT(absl::StrJoin(GoodputReport(a), "\n"), HasSubstr("no job_finished"));
}

TEST(GoodputTest, AVersionOneJournalIsAccounted) {
  const std::string dir = DLAUNCH_SOURCE_DIR "/tests/launcher/testdata/journal-v1";
  absl::StatusOr<EventJournal> events = ReadEventJournal(dir);
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_EQ(events->schema_version, 1);
  absl::StatusOr<MetricJournal> metrics = ReadMetricJournal(dir);
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  const v1::GoodputAccount a = ComputeGoodput(MakeTraceInput(*std::move(events), *std::move(metrics)));
  ExpectAddsUp(a);
  EXPECT_GT(a.wall_s(), 0);
  ASSERT_EQ(a.rounds_size(), 2);  // it fails in round 0, round 1 succeeds
  EXPECT_THAT(a.rounds(0).ended_by(), HasSubstr("failure"));
  // Its reports name no round: those after the restart are round 1's, by their time.
  EXPECT_GT(a.rounds(1).last_step(), 0);
  EXPECT_GT(a.split().redone().seconds(), 0);
  EXPECT_GT(a.split().failure().seconds(), 0);
  EXPECT_GT(a.split().productive().seconds(), 0);
}

TEST(GoodputTest, TheAccountGoesIntoSummaryJsonAsItsProtoJson) {
  v1::GoodputAccount a;
  a.set_job_id("j");
  a.set_wall_s(10);
  a.mutable_split()->mutable_productive()->set_seconds(10);
  absl::StatusOr<std::string> s = SummaryWithGoodput("{\"job_id\":\"j\",\"root_cause\":{\"a\":1}}", a);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(*s, HasSubstr("{\"job_id\":\"j\",\"root_cause\":{\"a\":1},\"goodput\":{"));
  // Written again, it replaces the first.
  absl::StatusOr<std::string> again = SummaryWithGoodput(*s, a);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *s);
  const size_t at = s->find("\"goodput\":");
  absl::StatusOr<v1::GoodputAccount> back =
      ParseGoodputJson(s->substr(at + 10, s->size() - at - 11));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->split().productive().seconds(), 10);
  EXPECT_FALSE(SummaryWithGoodput("not json", a).ok());
}

}  // namespace
}  // namespace dlaunch
