// ParseReportLine: how a worker's report line is read (snake and camel case, unknown fields
// ignored, a malformed line refused).
#include "agent/workers/report_server.h"

#include <string>

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace dlaunch {
namespace {

TEST(ParseReportLineTest, ReadsAPhaseReport) {
  v1::WorkerReport r;
  ASSERT_TRUE(ParseReportLine(R"({"kind": "PHASE", "rank": 1, "step": 16, "total_steps": 32,)"
                              R"( "phase": "EVALUATING"})",
                              &r)
                  .ok());
  EXPECT_EQ(r.kind(), v1::WorkerReport::PHASE);
  EXPECT_EQ(r.phase(), v1::WorkerReport::EVALUATING);
  EXPECT_EQ(r.step(), 16);
  EXPECT_EQ(r.samples(), 0);
}

TEST(ParseReportLineTest, ReadsSnakeAndCamelCaseAndIgnoresUnknownFields) {
  v1::WorkerReport r;
  ASSERT_TRUE(ParseReportLine(
                  R"({"step": 5, "samples": 64, "interval_s": 0.5, "testAccuracy": 0.7,)"
                  R"( "timings": {"forward_ms": 3}, "my_field": 1})",
                  &r)
                  .ok());
  EXPECT_EQ(r.step(), 5);
  EXPECT_EQ(r.samples(), 64);
  EXPECT_DOUBLE_EQ(r.interval_s(), 0.5);
  EXPECT_DOUBLE_EQ(r.test_accuracy(), 0.7);
  EXPECT_DOUBLE_EQ(r.timings().forward_ms(), 3);
}

TEST(ParseReportLineTest, AMalformedLineIsInvalidArgument) {
  v1::WorkerReport r;
  EXPECT_EQ(ParseReportLine("{not json", &r).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseReportLine(R"({"step": "many"})", &r).code(), absl::StatusCode::kInvalidArgument);
}

TEST(ParseReportLineTest, ReadsThePythonPackagesPhaseEvents) {
  v1::WorkerReport r;
  ASSERT_TRUE(ParseReportLine(R"({"kind":"PHASE","phase":"TRAINING","phase_name":"checkpoint",)"
                              R"("phase_event":"end","phase_s":4.1,"t":1718000004.35,"step":120,)"
                              R"("total_steps":10000,"rank":3})",
                              &r)
                  .ok());
  EXPECT_EQ(r.phase(), v1::WorkerReport::TRAINING);
  EXPECT_EQ(r.step(), 120);
  ASSERT_EQ(r.phase_log().events_size(), 1);
  const v1::PhaseEvent& e = r.phase_log().events(0);
  EXPECT_EQ(e.name(), "checkpoint");
  EXPECT_TRUE(e.end());
  EXPECT_DOUBLE_EQ(e.unix_s(), 1718000004.35);
  EXPECT_DOUBLE_EQ(e.seconds(), 4.1);

  v1::WorkerReport b;
  ASSERT_TRUE(ParseReportLine(R"({"kind":"PHASE","phase_name":"process_group",)"
                              R"("phase_event":"begin","t":1718000000.25,"rank":3})",
                              &b)
                  .ok());
  ASSERT_EQ(b.phase_log().events_size(), 1);
  EXPECT_FALSE(b.phase_log().events(0).end());
  EXPECT_EQ(b.phase(), v1::WorkerReport::PHASE_UNSPECIFIED);

  // A plain step line has no phase log at all.
  v1::WorkerReport s;
  ASSERT_TRUE(ParseReportLine(R"({"step": 5, "samples": 64, "phase_name": "x"})", &s).ok());
  EXPECT_FALSE(s.has_phase_log());
}

TEST(ParseReportLineTest, AMalformedPhaseEventIsRefusedWithTheReason) {
  v1::WorkerReport r;
  absl::Status st = ParseReportLine(
      R"({"kind":"PHASE","phase_name":"eval","phase_event":"middle","t":1718000000})", &r);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), "phase_event is \"begin\" or \"end\", not \"middle\"");
  EXPECT_EQ(ParseReportLine(R"({"phase_event":"end","t":1718000000,"phase_s":1})", &r).message(),
            "phase_event without a phase_name");
  EXPECT_EQ(ParseReportLine(R"({"phase_name":"a","phase_event":"end","phase_s":1})", &r).message(),
            "phase_event without a time t (Unix seconds)");
  EXPECT_EQ(ParseReportLine(R"({"phase_name":"a","phase_event":"end","t":5,"phase_s":-1})", &r)
                .message(),
            "phase_s is a length in seconds, 0 or more");
  EXPECT_EQ(ParseReportLine(R"({"phase_name":"a","phase_event":"end","t":"soon"})", &r).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace dlaunch
