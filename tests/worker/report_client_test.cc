#include "worker/report_client.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
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

TEST(ReportClientTest, SendsOneLinePerReportOnTheSocket) {
  char dir[] = "/tmp/report_test_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/r.sock";
  const int listener = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, path.c_str());
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(listener, 1), 0);

  absl::StatusOr<ReportClient> client = ReportClient::Connect(path);
  ASSERT_TRUE(client.ok()) << client.status();
  const int conn = accept(listener, nullptr, nullptr);
  ASSERT_GE(conn, 0);
  for (int step : {1, 2}) {
    dlaunch::v1::WorkerReport r;
    r.set_step(step);
    r.set_loss(0.25);
    client->Send(r);
  }
  std::string got;
  char buf[4096];
  while (std::count(got.begin(), got.end(), '\n') < 2) {
    const ssize_t n = read(conn, buf, sizeof(buf));
    ASSERT_GT(n, 0);
    got.append(buf, static_cast<size_t>(n));
  }
  const std::string first = got.substr(0, got.find('\n'));
  dlaunch::v1::WorkerReport parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(first, &parsed).ok()) << first;
  EXPECT_EQ(parsed.step(), 1);
  EXPECT_DOUBLE_EQ(parsed.loss(), 0.25);
  close(conn);
  close(listener);
  unlink(path.c_str());
  rmdir(dir);
}

TEST(ReportClientTest, UnreachableSocketIsUnavailable) {
  absl::StatusOr<ReportClient> client = ReportClient::Connect("/tmp/no-such-dir-dlaunch/r.sock");
  EXPECT_TRUE(absl::IsUnavailable(client.status())) << client.status();
}

}  // namespace
}  // namespace dlaunch::worker
