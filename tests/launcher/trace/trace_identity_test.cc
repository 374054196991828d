// The timeline after a restart that moves nodes to other node ranks: marks of a hang and of a
// failure go under the node that had the rank, named by its id, never under the node whose id
// equals the node rank.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "launcher/jobdir/journal.h"
#include "launcher/trace/trace_bound.h"
#include "launcher/trace/trace_builder.h"
#include "tests/launcher/trace/trace_checks.h"

namespace dlaunch {
namespace {

using ::testing::IsEmpty;
using ::testing::SizeIs;
using testing::ParsedTrace;

std::string At(int ms) {
  return absl::StrFormat("2026-11-23T10:%02d:%02d.%03dZ", ms / 60000, (ms / 1000) % 60, ms % 1000);
}

// A line as dlaunch wrote events.jsonl before the typed journal (schema version 1).
std::string V1(int ms, const std::string& name, const std::string& fields) {
  return absl::StrCat("{\"time\":\"", At(ms), "\",\"event\":\"", name, "\",", fields, "}\n");
}

// A line of the typed journal.
std::string Typed(int ms, int round, const std::string& name, const std::string& fields) {
  return absl::StrCat("{\"time\":\"", At(ms), "\",\"round\":", round, ",\"", name, "\":{", fields,
                      "}}\n");
}

ParsedTrace Render(const std::string& events) {
  TraceInput in = MakeTraceInput(ParseEventJournal(events).value(), MetricJournal{});
  return testing::ParseTrace(RenderTrace(BuildTraceParts(in), kDefaultTraceLimitBytes).json);
}

// Nodes 0, 1, 2 of one rank each and spare node 3. Node 1 is lost in round 0; round 1 keeps
// nodes 0 and 2 in order and the spare fills the end, so node 2 has node rank 1 and runs rank
// 1. Then rank 1 stalls.
std::string RoundZero() {
  return V1(0, "job_started", "\"job_id\":\"j\",\"nodes\":3,\"hosts\":[\"n0\",\"n1\",\"n2\"]") +
         V1(100, "rendezvous_closed",
            "\"round\":0,\"world_size\":3,\"node_order\":[\"n0\",\"n1\",\"n2\"]") +
         V1(150, "spare_joined", "\"node\":3,\"host\":\"n3\",\"addr\":\"10.0.0.3\",\"slots\":1") +
         V1(200, "worker_started", "\"rank\":0,\"local_rank\":0,\"node\":0,\"host\":\"n0\",\"pid\":10") +
         V1(200, "worker_started", "\"rank\":1,\"local_rank\":0,\"node\":1,\"host\":\"n1\",\"pid\":11") +
         V1(200, "worker_started", "\"rank\":2,\"local_rank\":0,\"node\":2,\"host\":\"n2\",\"pid\":12") +
         V1(1000, "node_lost", "\"node\":1,\"host\":\"n1\",\"reason\":\"its agent died\",\"round\":0") +
         V1(1100, "worker_ended", "\"rank\":0,\"node\":0,\"host\":\"n0\",\"state\":\"stopped\","
                                  "\"exit_code\":0,\"signal\":15") +
         V1(1100, "worker_ended", "\"rank\":2,\"node\":2,\"host\":\"n2\",\"state\":\"stopped\","
                                  "\"exit_code\":0,\"signal\":15") +
         V1(1200, "spare_promoted", "\"round\":1,\"node\":3,\"host\":\"n3\"") +
         V1(1200, "round_started", "\"round\":1,\"nodes\":[\"0\",\"2\",\"3\"],\"world_size\":3");
}

TEST(TraceIdentityTest, AnEarlierDlaunchsHangMarksLandUnderTheNodeThatRanTheRank) {
  // Version 1 wrote a hang's and a failure's node *rank* (1) under "node".
  const std::string stall =
      "\"class\":\"stall\",\"rank\":1,\"local_rank\":0,\"node\":1,\"host\":\"n2\","
      "\"description\":\"stall: rank 1 (local 0, node 1, host n2)\"";
  const std::string events =
      RoundZero() +
      V1(1300, "worker_started", "\"rank\":0,\"local_rank\":0,\"node\":0,\"host\":\"n0\",\"pid\":20") +
      V1(1300, "worker_started", "\"rank\":1,\"local_rank\":0,\"node\":2,\"host\":\"n2\",\"pid\":21") +
      V1(1300, "worker_started", "\"rank\":2,\"local_rank\":0,\"node\":3,\"host\":\"n3\",\"pid\":22") +
      V1(9000, "hang_detected", stall.substr(0, stall.find(",\"description\"")) +
                                    ",\"silent_s\":7,\"limit_s\":5,\"hung_ranks\":[\"1\"]") +
      V1(9000, "failure_detected", "\"failure\":{" + stall + "}") +
      V1(9500, "job_finished", "\"result\":\"failed\",\"exit_code\":1");
  ParsedTrace t = Render(events);
  ASSERT_TRUE(t.ok) << t.error;
  EXPECT_THAT(testing::StructureProblems(t), IsEmpty());
  auto hang = t.Named("hang detected (stall)", "i");
  ASSERT_THAT(hang, SizeIs(1));
  EXPECT_EQ(hang[0]->pid, NodePid(2)) << "node 2 ran rank 1 in round 1; node 1 was long gone";
  auto failure = t.Named("failure: stall: rank 1", "i");
  ASSERT_THAT(failure, SizeIs(1));
  EXPECT_EQ(failure[0]->pid, NodePid(2));
  EXPECT_THAT(t.Named("failure", "i"), SizeIs(1));
}

TEST(TraceIdentityTest, TypedMarksArePlacedByNodeIdEvenWithoutAWorkerStart) {
  // No worker_started of round 1 here: only the records' own node_id can place the marks.
  const std::string failure =
      "\"failure_class\":\"worker crash\",\"rank\":1,\"local_rank\":0,\"node_id\":2,"
      "\"node_rank\":1,\"host\":\"n2\",\"description\":\"worker crash: rank 1\"";
  const std::string events =
      RoundZero() +
      Typed(9000, 1, "hang_detected",
            "\"failure_class\":\"stall\",\"rank\":1,\"node_id\":2,\"node_rank\":1,\"host\":\"n2\"") +
      Typed(9100, 1, "worker_failed",
            "\"rank\":1,\"node_id\":2,\"node_rank\":1,\"host\":\"n2\",\"exit_code\":3") +
      Typed(9100, 1, "failure_detected", "\"failure\":{" + failure + "}") +
      Typed(9500, 1, "job_finished", "\"result\":\"failed\",\"exit_code\":1");
  ParsedTrace t = Render(events);
  ASSERT_TRUE(t.ok) << t.error;
  EXPECT_THAT(testing::StructureProblems(t), IsEmpty());
  for (const char* mark : {"hang detected (stall)", "worker failed", "failure: worker crash"}) {
    auto found = t.Named(mark, "i");
    ASSERT_THAT(found, SizeIs(1)) << mark;
    EXPECT_EQ(found[0]->pid, NodePid(2)) << mark;
  }
}

}  // namespace
}  // namespace dlaunch
