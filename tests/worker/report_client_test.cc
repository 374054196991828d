// The report client's JSON lines: field names, every phase, a phase report's short form. Its
// socket is tested in process/report_client_socket_test.cc.
#include "worker/report_client.h"

#include <utility>

#include "dlaunch/report.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"

namespace dlaunch::worker {
namespace {

TEST(ReportClientTest, JsonUsesSnakeCaseFieldNames) {
  dlaunch::v1::WorkerReport r;
  r.set_kind(dlaunch::v1::WorkerReport::EPOCH);
  r.set_step(12);
  r.set_samples_per_sec(100.5);
  r.set_test_accuracy(0.9);
  r.mutable_timings()->set_comm_wait_ms(1.5);
  absl::StatusOr<std::string> json = ReportToJson(r);
  ASSERT_TRUE(json.ok());
  EXPECT_NE(json->find("\"samples_per_sec\":100.5"), std::string::npos) << *json;
  EXPECT_NE(json->find("\"test_accuracy\":0.9"), std::string::npos) << *json;
  EXPECT_NE(json->find("\"comm_wait_ms\""), std::string::npos) << *json;
  EXPECT_EQ(json->find('\n'), std::string::npos);
}

TEST(ReportClientTest, ATrainerReportBecomesTheSameWorkerReport) {
  TrainerReport t;
  t.kind = TrainerReport::Kind::kFinal;
  t.rank = 3;
  t.step = 40;
  t.epoch = 1;
  t.samples = 640;
  t.interval_s = 2.5;
  t.loss = 0.25;
  t.test_accuracy = 0.875;
  t.samples_per_sec = 256;
  t.forward_ms = 7;
  t.message = "m";
  t.checkpoint_step = 30;
  t.total_steps = 40;
  v1::WorkerReport r;
  ToWorkerReport(t, &r);
  EXPECT_EQ(r.kind(), v1::WorkerReport::FINAL);
  EXPECT_EQ(r.rank(), 3);
  EXPECT_EQ(r.step(), 40);
  EXPECT_EQ(r.epoch(), 1);
  EXPECT_EQ(r.samples(), 640);
  EXPECT_DOUBLE_EQ(r.interval_s(), 2.5);
  EXPECT_DOUBLE_EQ(r.loss(), 0.25);
  EXPECT_FALSE(r.has_accuracy());  // absent stays absent
  ASSERT_TRUE(r.has_test_accuracy());
  EXPECT_DOUBLE_EQ(r.test_accuracy(), 0.875);
  EXPECT_DOUBLE_EQ(r.samples_per_sec(), 256);
  EXPECT_DOUBLE_EQ(r.timings().forward_ms(), 7);
  EXPECT_EQ(r.message(), "m");
  EXPECT_EQ(r.checkpoint_step(), 30);
  EXPECT_EQ(r.total_steps(), 40);
  EXPECT_EQ(r.phase(), v1::WorkerReport::PHASE_UNSPECIFIED);
}

TEST(ReportClientTest, EveryPhaseMapsToItsProtoValue) {
  const std::pair<TrainerReport::Phase, v1::WorkerReport::Phase> cases[] = {
      {TrainerReport::Phase::kUnspecified, v1::WorkerReport::PHASE_UNSPECIFIED},
      {TrainerReport::Phase::kLoadingData, v1::WorkerReport::LOADING_DATA},
      {TrainerReport::Phase::kTraining, v1::WorkerReport::TRAINING},
      {TrainerReport::Phase::kEvaluating, v1::WorkerReport::EVALUATING},
      {TrainerReport::Phase::kCheckpointing, v1::WorkerReport::CHECKPOINTING},
  };
  for (const auto& [in, want] : cases) {
    TrainerReport t;
    t.kind = TrainerReport::Kind::kEpoch;
    t.phase = in;
    v1::WorkerReport r;
    ToWorkerReport(t, &r);
    EXPECT_EQ(r.phase(), want) << static_cast<int>(in);
  }
}

TEST(ReportClientTest, APhaseReportIsAShortLineWithoutSamplesOrTimings) {
  TrainerReport t;
  t.kind = TrainerReport::Kind::kPhase;
  t.phase = TrainerReport::Phase::kEvaluating;
  t.rank = 1;
  t.step = 16;
  t.total_steps = 32;
  v1::WorkerReport r;
  ToWorkerReport(t, &r);
  EXPECT_EQ(r.kind(), v1::WorkerReport::PHASE);
  EXPECT_FALSE(r.has_timings());
  absl::StatusOr<std::string> json = ReportToJson(r);
  ASSERT_TRUE(json.ok());
  EXPECT_EQ(*json, R"({"kind":"PHASE","rank":1,"step":"16","total_steps":"32","phase":"EVALUATING"})");
}

}  // namespace
}  // namespace dlaunch::worker
