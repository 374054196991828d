// ParseReportLine: how a worker's report line is read (snake and camel case, unknown fields
// ignored, a malformed line refused).
#include "agent/report_server.h"

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

}  // namespace
}  // namespace dlaunch
