#include "launcher/trace/trace_builder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "launcher/jobdir/journal.h"
#include "launcher/trace/trace_bound.h"
#include "tests/launcher/trace/trace_checks.h"

namespace dlaunch {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::ParsedEvent;
using testing::ParsedTrace;
using ::testing::SizeIs;

// 2026-11-23T10:00:00Z plus `ms` milliseconds, as the journal writes times.
std::string At(int ms) {
  return absl::StrFormat("2026-11-23T10:%02d:%02d.%03dZ", ms / 60000, (ms / 1000) % 60, ms % 1000);
}
constexpr int64_t kT0Unix = 1795428000000000;  // 2026-11-23T10:00:00Z in microseconds

std::string Event(int ms, const std::string& name, const std::string& fields = "") {
  return absl::StrCat("{\"time\":\"", At(ms), "\",\"event\":\"", name, "\"",
                      fields.empty() ? "" : ",", fields, "}\n");
}

// A job of 2 local nodes x 1 rank that trains 4 steps and succeeds.
std::string HappyEvents() {
  return Event(0, "job_started", "\"job_id\":\"j1\",\"nodes\":2,\"hosts\":[\"n0\",\"n1\"]") +
         Event(100, "node_joined",
               "\"host\":\"n1\",\"addr\":\"10.0.0.2\",\"slots\":1,\"joined\":1") +
         Event(150, "node_joined",
               "\"host\":\"n0\",\"addr\":\"10.0.0.1\",\"slots\":1,\"joined\":2") +
         Event(200, "rendezvous_closed",
               "\"round\":1,\"world_size\":2,\"node_order\":[\"n0\",\"n1\"]") +
         Event(300, "worker_started",
               "\"rank\":0,\"local_rank\":0,\"node\":0,\"host\":\"n0\",\"pid\":11") +
         Event(310, "worker_started",
               "\"rank\":1,\"local_rank\":0,\"node\":1,\"host\":\"n1\",\"pid\":12") +
         Event(310, "workers_started", "\"workers\":2") +
         Event(2000, "worker_ended",
               "\"rank\":0,\"node\":0,\"host\":\"n0\",\"state\":\"succeeded\",\"exit_code\":0,"
               "\"signal\":0") +
         Event(2010, "worker_ended",
               "\"rank\":1,\"node\":1,\"host\":\"n1\",\"state\":\"succeeded\",\"exit_code\":0,"
               "\"signal\":0") +
         Event(2100, "stop_requested", "\"reason\":\"job finished\"") +
         Event(2200, "job_finished",
               "\"result\":\"succeeded\",\"exit_code\":0,\"wall_time_s\":2.2");
}

std::string Metric(int ms, int rank, int step, double interval_s) {
  return absl::StrFormat(
      "{\"time\":\"%s\",\"node\":%d,\"rank\":%d,\"step\":%d,\"samples\":64,\"interval_s\":%g,"
      "\"loss\":0.5,\"data_ms\":1,\"forward_ms\":2,\"backward_ms\":3,\"optimizer_ms\":1}\n",
      At(ms), rank, rank, step, interval_s);
}

// dlaunch-worker's step trace: steps of 10 ms from `start_ms`, phases 1/2/6/1 ms.
std::string StepTrace(int rank, int steps, int start_ms) {
  std::string out = absl::StrCat("{\"trace\":\"dlaunch-step-trace\",\"version\":1,\"rank\":", rank,
                                 ",\"clock\":\"unix_us\",\"sampling\":\"every step\"}\n");
  for (int s = 1; s <= steps; ++s) {
    absl::StrAppend(
        &out, "{\"step\":", s, ",\"ts\":", kT0Unix + (start_ms + 10 * (s - 1)) * 1000,
        ",\"data\":1000,\"forward\":2000,\"backward\":6000,\"optimizer\":1000,\"stride\":1}\n");
  }
  return out;
}

TraceInput Input(const std::string& events, const std::string& metrics = "",
                 std::map<int, std::string> steps = {}) {
  TraceInput in = MakeTraceInput(ParseEventJournal(events).value(), ParseMetricJournal(metrics));
  for (auto& [rank, text] : steps) in.rank_steps[rank] = ParseStepTrace(text);
  return in;
}

ParsedTrace Render(const TraceInput& in, size_t limit = kDefaultTraceLimitBytes) {
  return testing::ParseTrace(RenderTrace(BuildTraceParts(in), limit).json);
}

std::vector<std::string> Names(const std::vector<const ParsedEvent*>& events) {
  std::vector<std::string> out;
  for (const ParsedEvent* e : events) out.push_back(e->name);
  return out;
}

class HappyJobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string metrics = Metric(1100, 0, 2, 0.02) + Metric(1100, 1, 2, 0.02) +
                          Metric(1900, 0, 4, 0.02) + Metric(1900, 1, 4, 0.03);
    trace_ = Render(
        Input(HappyEvents(), metrics, {{0, StepTrace(0, 4, 1000)}, {1, StepTrace(1, 4, 1001)}}));
    ASSERT_TRUE(trace_.ok) << trace_.error;
  }
  ParsedTrace trace_;
};

TEST_F(HappyJobTest, IsWellFormed) {
  EXPECT_THAT(testing::StructureProblems(trace_), IsEmpty());
  EXPECT_EQ(trace_.display_time_unit, "ms");
  EXPECT_THAT(trace_.Notes(), Contains("worker step traces: every step"));
}

TEST_F(HappyJobTest, OneTrackForTheLauncherEachNodeAndEachRank) {
  EXPECT_EQ(trace_.TrackName(kLauncherPid, -1), "launcher");
  EXPECT_EQ(trace_.TrackName(NodePid(0), -1), "node 0 (n0)");
  EXPECT_EQ(trace_.TrackName(NodePid(1), -1), "node 1 (n1)");
  EXPECT_EQ(trace_.TrackName(NodePid(1), NodeTid(1)), "node 1 events");
  EXPECT_EQ(trace_.TrackName(NodePid(0), RankTid(0)), "rank 0");
  EXPECT_EQ(trace_.TrackName(NodePid(1), RankTid(1)), "rank 1");
  EXPECT_EQ(trace_.TrackName(NodePid(1), ReportTid(1)), "rank 1 reports");
}

TEST_F(HappyJobTest, LauncherSpansCoverTheJobRendezvousAndStop) {
  auto job = trace_.Named("job succeeded", "X");
  ASSERT_THAT(job, SizeIs(1));
  EXPECT_EQ(job[0]->ts, 0);
  EXPECT_EQ(job[0]->dur, 2200000);
  auto rdzv = trace_.Named("rendezvous", "X");
  ASSERT_THAT(rdzv, SizeIs(1));
  EXPECT_EQ(rdzv[0]->dur, 200000);
  auto stop = trace_.Named("stop", "X");
  ASSERT_THAT(stop, SizeIs(1));
  EXPECT_EQ(stop[0]->ts, 2100000);
  EXPECT_THAT(Names(trace_.Named("", "i")), Contains("job finished: succeeded"));
  EXPECT_THAT(Names(trace_.Named("", "i")), Contains("all workers started"));
}

TEST_F(HappyJobTest, NodeJoinsAreOnTheirNodesTracks) {
  auto joins = trace_.Named("node joined", "i");
  ASSERT_THAT(joins, SizeIs(2));
  EXPECT_EQ(joins[0]->pid, NodePid(1));
  EXPECT_EQ(joins[1]->pid, NodePid(0));
  EXPECT_EQ(joins[0]->args.fields().at("addr").string_value(), "10.0.0.2");
}

TEST_F(HappyJobTest, EachRankHasItsProcessSpanWithItsExit) {
  auto r1 = trace_.Named("rank 1: succeeded, exit code 0", "X");
  ASSERT_THAT(r1, SizeIs(1));
  EXPECT_EQ(r1[0]->pid, NodePid(1));
  EXPECT_EQ(r1[0]->tid, RankTid(1));
  EXPECT_EQ(r1[0]->ts, 310000);
  EXPECT_EQ(r1[0]->args.fields().at("exit_code").number_value(), 0);
}

TEST_F(HappyJobTest, WorkerStepsAndPhasesNestOnTheRankTrack) {
  std::vector<const ParsedEvent*> steps;
  for (const ParsedEvent* e : trace_.Named("step ", "X")) {
    if (e->cat == "step") steps.push_back(e);
  }
  ASSERT_THAT(steps, SizeIs(8));
  EXPECT_EQ(steps[0]->tid, RankTid(0));
  EXPECT_EQ(steps[0]->ts, 1000000);
  EXPECT_EQ(steps[0]->dur, 10000);
  auto backward = trace_.Named("backward + allreduce", "X");
  ASSERT_THAT(backward, SizeIs(8));
  EXPECT_EQ(backward[0]->ts, 1003000);
  EXPECT_EQ(backward[0]->dur, 6000);
  EXPECT_THAT(trace_.Named("data", "X"), SizeIs(8));
  EXPECT_THAT(trace_.Named("forward", "X"), SizeIs(8));
  EXPECT_THAT(trace_.Named("optimizer", "X"), SizeIs(8));
}

TEST_F(HappyJobTest, ReportsAreSpansEndingWhenTheyWereReceived) {
  std::vector<const ParsedEvent*> reports;
  for (const ParsedEvent& e : trace_.events) {
    if (e.cat == "report" && e.tid == ReportTid(1)) reports.push_back(&e);
  }
  ASSERT_THAT(reports, SizeIs(2));
  EXPECT_EQ(reports[0]->name, "report: to step 2");
  EXPECT_EQ(reports[1]->name, "report: steps 3-4");
  EXPECT_EQ(reports[0]->args.fields().count("first_step"), 0u);
  EXPECT_EQ(reports[1]->args.fields().at("first_step").number_value(), 3);
  EXPECT_EQ(reports[0]->ts + reports[0]->dur, 1100000);
  EXPECT_EQ(reports[0]->dur, 20000);
  EXPECT_EQ(reports[1]->ts + reports[1]->dur, 1900000);
  EXPECT_EQ(reports[1]->dur, 30000);
  EXPECT_EQ(reports[0]->args.fields().at("samples").number_value(), 64);
}

TEST(TraceBuilderTest, ReportsThatCameInOneHeartbeatLineUpBackToBack) {
  TraceParts parts = BuildTraceParts(
      Input(Event(0, "job_started"),
            Metric(1000, 0, 1, 0.1) + Metric(1000, 0, 2, 0.1) + Metric(1000, 0, 3, 0.1)));
  ASSERT_THAT(parts.reports[0], SizeIs(3));
  EXPECT_EQ(parts.reports[0][0].begin_us, 700000);
  EXPECT_EQ(parts.reports[0][0].end_us, 800000);
  EXPECT_EQ(parts.reports[0][1].begin_us, 800000);
  EXPECT_EQ(parts.reports[0][2].end_us, 1000000);
  EXPECT_EQ(parts.reports[0][2].first_step, 3);
}

TEST(TraceBuilderTest, FailuresAreOnTheFailedRankAndTheRootCauseCrossesAllTracks) {
  std::string failure =
      "\"failure\":{\"class\":\"worker crash\",\"rank\":1,\"node\":1,\"host\":\"n1\","
      "\"description\":\"rank 1 on n1 exited with code 3\"}";
  std::string events =
      Event(0, "job_started", "\"job_id\":\"j\"") +
      Event(200, "rendezvous_closed", "\"node_order\":[\"n0\",\"n1\"]") +
      Event(300, "worker_started", "\"rank\":1,\"node\":1,\"host\":\"n1\",\"pid\":5") +
      Event(900, "worker_failed", "\"rank\":1,\"node\":1,\"exit_code\":3,\"signal\":0") +
      Event(900, "worker_ended",
            "\"rank\":1,\"node\":1,\"state\":\"failed\",\"exit_code\":3,\"signal\":0") +
      Event(901, "failure_detected", failure) +
      Event(901, "stop_requested", "\"reason\":\"rank 1 failed\"") +
      Event(950, "root_cause", failure + ",\"consequences\":0") +
      Event(1500, "job_finished", "\"result\":\"failed\",\"exit_code\":1");
  ParsedTrace t = Render(Input(events));
  EXPECT_THAT(testing::StructureProblems(t), IsEmpty());
  auto failed = t.Named("failure: rank 1 on n1 exited with code 3", "i");
  ASSERT_THAT(failed, SizeIs(1));
  EXPECT_EQ(failed[0]->tid, RankTid(1));
  auto root = t.Named("root cause: rank 1 on n1 exited with code 3", "i");
  ASSERT_THAT(root, SizeIs(1));
  EXPECT_EQ(root[0]->scope, "g");
  EXPECT_THAT(t.Named("rank 1: failed, exit code 3", "X"), SizeIs(1));
  EXPECT_THAT(t.Named("worker failed", "i"), SizeIs(1));
  EXPECT_THAT(t.Named("job failed", "X"), SizeIs(1));
}

TEST(TraceBuilderTest, OtherEventsAreInstantsWithTheirFieldsOnTheirTrack) {
  std::string events =
      Event(0, "job_started") + Event(200, "rendezvous_closed", "\"node_order\":[\"a\",\"b\"]") +
      Event(500, "spare_promoted", "\"round\":2,\"node\":1,\"host\":\"b\"") +
      Event(600, "restart_decision", "\"decision\":\"restart\",\"reason\":\"rank 0 failed\"") +
      Event(700, "restart_decided", "\"why\":\"not an event of any schema\"");
  ParsedTrace t = Render(Input(events));
  EXPECT_THAT(testing::StructureProblems(t), IsEmpty());
  auto promoted = t.Named("spare_promoted", "i");
  ASSERT_THAT(promoted, SizeIs(1));
  EXPECT_EQ(promoted[0]->pid, NodePid(1));
  EXPECT_EQ(promoted[0]->tid, NodeTid(1));
  EXPECT_EQ(promoted[0]->args.fields().at("round").number_value(), 2);
  EXPECT_EQ(promoted[0]->args.fields().at("host").string_value(), "b");
  auto decision = t.Named("restart_decision", "i");
  ASSERT_THAT(decision, SizeIs(1));
  EXPECT_EQ(decision[0]->pid, kLauncherPid);
  EXPECT_EQ(decision[0]->args.fields().at("reason").string_value(), "rank 0 failed");
  EXPECT_THAT(t.Named("restart_decided", "i"), IsEmpty());
  EXPECT_THAT(t.Notes(), Contains("events.jsonl: 1 unreadable line(s) skipped"));
}

TEST(TraceBuilderTest, AJournalCutShortEndsOpenSpansAtItsLastTime) {
  std::string events = Event(0, "job_started") +
                       Event(200, "rendezvous_closed", "\"node_order\":[\"a\"]") +
                       Event(300, "worker_started", "\"rank\":0,\"node\":0,\"pid\":5") +
                       "{\"time\":\"2026-11-23T10:00:0";  // torn by a killed launcher
  ParsedTrace t = Render(Input(events, Metric(5000, 0, 10, 1.0)));
  EXPECT_THAT(testing::StructureProblems(t), IsEmpty());
  auto job = t.Named("job (no end recorded)", "X");
  ASSERT_THAT(job, SizeIs(1));
  EXPECT_EQ(job[0]->dur, 5000000);
  EXPECT_TRUE(job[0]->args.fields().at("unfinished").bool_value());
  EXPECT_THAT(t.Named("rank 0: no end recorded", "X"), SizeIs(1));
  EXPECT_THAT(t.Notes(), Contains("events.jsonl: 1 unreadable line(s) skipped"));
}

TEST(TraceBuilderTest, LocalNodesSharingAHostJoinOnTheLauncherTrack) {
  std::string events = Event(0, "job_started") +
                       Event(100, "node_joined", "\"host\":\"here\",\"addr\":\"127.0.0.1\"") +
                       Event(200, "rendezvous_closed", "\"node_order\":[\"here\",\"here\"]");
  ParsedTrace t = Render(Input(events));
  auto joins = t.Named("node joined", "i");
  ASSERT_THAT(joins, SizeIs(1));
  EXPECT_EQ(joins[0]->pid, kLauncherPid);
  EXPECT_EQ(joins[0]->tid, kLauncherTid);
  EXPECT_EQ(t.TrackName(NodePid(1), -1), "node 1 (here)");
}

TEST(TraceBuilderTest, ProcessSpanWidensToHoldStepsStampedByTheWorkersClock) {
  // The worker's first step starts 5 ms before the launcher heard the rank had started.
  std::string events =
      Event(0, "job_started") + Event(200, "rendezvous_closed", "\"node_order\":[\"a\"]") +
      Event(1005, "worker_started", "\"rank\":0,\"node\":0,\"pid\":5") +
      Event(1020, "worker_ended", "\"rank\":0,\"node\":0,\"state\":\"succeeded\"") +
      Event(1100, "job_finished", "\"result\":\"succeeded\"");
  ParsedTrace t = Render(Input(events, "", {{0, StepTrace(0, 3, 1000)}}));
  EXPECT_THAT(testing::StructureProblems(t), IsEmpty());
  auto life = t.Named("rank 0: succeeded", "X");
  ASSERT_THAT(life, SizeIs(1));
  EXPECT_EQ(life[0]->ts, 1000000);
  EXPECT_EQ(life[0]->ts + life[0]->dur, 1030000);
}

TEST(TraceBuilderTest, ARankThatMovesToASpareAfterARestartIsDrawnUnderEachNode) {
  // Round 1: rank 0 on node 0 (host a). Node 0 is lost; round 2: rank 0 on spare node 2 (c).
  std::string events =
      Event(0, "job_started") + Event(200, "rendezvous_closed", "\"node_order\":[\"a\",\"b\"]") +
      Event(300, "worker_started", "\"rank\":0,\"node\":0,\"host\":\"a\",\"pid\":5") +
      Event(2000, "worker_ended",
            "\"rank\":0,\"node\":0,\"host\":\"a\",\"state\":\"failed\",\"exit_code\":1") +
      Event(2500, "round_started", "\"round\":2,\"nodes\":[2,1]") +
      Event(2600, "worker_started", "\"rank\":0,\"node\":2,\"host\":\"c\",\"pid\":6") +
      Event(6000, "worker_ended",
            "\"rank\":0,\"node\":2,\"host\":\"c\",\"state\":\"succeeded\",\"exit_code\":0") +
      Event(6100, "job_finished", "\"result\":\"succeeded\"");
  auto metric = [](int ms, int node, int step) {
    return absl::StrFormat(
        "{\"time\":\"%s\",\"node\":%d,\"rank\":0,\"step\":%d,\"samples\":64,"
        "\"interval_s\":0.02,\"loss\":0.5}\n",
        At(ms), node, step);
  };
  // Steps 1-2 in round 1 (at 1.0 s), steps 3-4 after the resume (at 3.0 s).
  std::string steps = StepTrace(0, 2, 1000);
  for (int s = 3; s <= 4; ++s) {
    absl::StrAppend(&steps, "{\"step\":", s, ",\"ts\":", kT0Unix + (3000 + 10 * (s - 3)) * 1000,
                    ",\"data\":1000,\"forward\":2000,\"backward\":6000,\"optimizer\":1000,"
                    "\"stride\":1}\n");
  }
  ParsedTrace t =
      Render(Input(events, metric(1100, 0, 2) + metric(3100, 2, 4), {{0, steps}}));
  EXPECT_THAT(testing::StructureProblems(t), IsEmpty());
  EXPECT_EQ(t.TrackName(NodePid(2), -1), "node 2 (c)");

  auto failed = t.Named("rank 0: failed", "X");
  ASSERT_THAT(failed, SizeIs(1));
  EXPECT_EQ(failed[0]->pid, NodePid(0));
  EXPECT_EQ(failed[0]->tid, RankTid(0));
  auto succeeded = t.Named("rank 0: succeeded", "X");
  ASSERT_THAT(succeeded, SizeIs(1));
  EXPECT_EQ(succeeded[0]->pid, NodePid(2));
  EXPECT_NE(succeeded[0]->tid, RankTid(0));  // a tid names one thread in the whole trace
  EXPECT_EQ(t.TrackName(NodePid(0), RankTid(0)), "rank 0");
  EXPECT_EQ(t.TrackName(NodePid(2), succeeded[0]->tid), "rank 0");
  EXPECT_EQ(t.TrackName(NodePid(2), succeeded[0]->tid + 1), "rank 0 reports");

  std::map<std::string, int> step_node;
  for (const ParsedEvent* e : t.Named("step ", "X")) {
    if (e->cat == "step") step_node[e->name] = e->pid;
  }
  EXPECT_EQ(step_node, (std::map<std::string, int>{{"step 1", NodePid(0)},
                                                   {"step 2", NodePid(0)},
                                                   {"step 3", NodePid(2)},
                                                   {"step 4", NodePid(2)}}));
  // Each process span holds its own round's steps only.
  EXPECT_EQ(failed[0]->ts + failed[0]->dur, 2000000);
  EXPECT_EQ(succeeded[0]->ts, 2600000);
  std::vector<int> report_nodes;
  for (const ParsedEvent& e : t.events) {
    if (e.cat == "report") report_nodes.push_back(e.pid);
  }
  EXPECT_THAT(report_nodes, ::testing::UnorderedElementsAre(NodePid(0), NodePid(2)));
}

TEST(TraceBuilderTest, AnEmptyJournalIsStillATrace) {
  ParsedTrace t = Render(Input(""));
  EXPECT_THAT(testing::StructureProblems(t), IsEmpty());
  EXPECT_EQ(t.TrackName(kLauncherPid, -1), "launcher");
}

}  // namespace
}  // namespace dlaunch

namespace dlaunch {
namespace {

// A typed journal line of round 0 (schema 2).
std::string Typed(int ms, const std::string& name, const std::string& fields) {
  return absl::StrCat("{\"time\":\"", At(ms), "\",\"round\":0,\"", name, "\":{", fields, "}}\n");
}

// A node named a straggler is a span on its own track, from named to cleared, with both events'
// figures; one never cleared ends at the journal's last time.
TEST(TraceBuilderTest, AStragglerIsASpanOnItsNodesTrack) {
  const std::string figures = "\"node_id\":1,\"host\":\"b\",\"rank\":3,\"ratio\":2,\"step_s\":0.2";
  std::string events =
      Typed(0, "journal_opened", "\"schema_version\":2,\"job_id\":\"j\"") +
      Typed(0, "job_started", "\"job_id\":\"j\",\"nodes\":2") +
      Typed(200, "rendezvous_closed", "\"node_order\":[\"a\",\"b\"],\"node_ids\":[0,1]") +
      Typed(1000, "straggler_detected", figures) +
      Typed(3000, "straggler_cleared", figures + ",\"waited_s\":0.9,\"reason\":\"back\"") +
      Typed(3500, "straggler_detected", "\"node_id\":0,\"host\":\"a\",\"rank\":0,\"ratio\":1.5") +
      Typed(4000, "job_finished", "\"result\":\"succeeded\"");
  ParsedTrace t = Render(Input(events));
  EXPECT_THAT(testing::StructureProblems(t), IsEmpty());
  auto spans = t.Named("straggler: rank 3 at 2.00x the median", "X");
  ASSERT_THAT(spans, SizeIs(1));
  EXPECT_EQ(spans[0]->pid, NodePid(1));
  EXPECT_EQ(spans[0]->tid, NodeTid(1));
  EXPECT_EQ(spans[0]->ts, 1000000);
  EXPECT_EQ(spans[0]->dur, 2000000);
  EXPECT_EQ(spans[0]->args.fields().at("cleared").struct_value().fields().at("waited_s").number_value(), 0.9);
  auto open = t.Named("straggler (not cleared)", "X");
  ASSERT_THAT(open, SizeIs(1));
  EXPECT_EQ(open[0]->pid, NodePid(0));
  EXPECT_EQ(open[0]->dur, 500000);
}

}  // namespace
}  // namespace dlaunch
