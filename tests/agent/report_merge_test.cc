// MergeReports and ParseReportLine: how workers' report lines are read and folded per rank;
// and the ReportServer's bound on a line.
#include "proto/report_merge.h"

#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "agent/report_server.h"
#include "gtest/gtest.h"

namespace dlaunch {
namespace {

v1::WorkerReport Report(int64_t step, int64_t samples, double interval_s) {
  v1::WorkerReport r;
  r.set_rank(1);
  r.set_step(step);
  r.set_samples(samples);
  r.set_interval_s(interval_s);
  r.set_samples_per_sec(samples / interval_s);
  return r;
}

TEST(MergeReportsTest, SamplesIntervalAndPhaseTimesAddUpAndTheRateIsRecomputed) {
  v1::WorkerReport a = Report(10, 100, 1.0);
  a.mutable_timings()->set_forward_ms(10);
  a.mutable_timings()->set_comm_wait_ms(1);
  a.set_loss(2.0);
  v1::WorkerReport b = Report(20, 300, 1.0);
  b.mutable_timings()->set_forward_ms(30);
  b.mutable_timings()->set_optimizer_ms(5);
  b.set_loss(1.5);

  v1::WorkerReport m = MergeReports(a, b);
  EXPECT_EQ(m.samples(), 400);
  EXPECT_DOUBLE_EQ(m.interval_s(), 2.0);
  EXPECT_DOUBLE_EQ(m.samples_per_sec(), 200.0);
  EXPECT_DOUBLE_EQ(m.timings().forward_ms(), 40);
  EXPECT_DOUBLE_EQ(m.timings().comm_wait_ms(), 1);
  EXPECT_DOUBLE_EQ(m.timings().optimizer_ms(), 5);
  // Everything else is the latest value.
  EXPECT_EQ(m.step(), 20);
  EXPECT_DOUBLE_EQ(m.loss(), 1.5);
}

TEST(MergeReportsTest, ATestAccuracyIsKeptUntilANewerOneArrives) {
  v1::WorkerReport a = Report(10, 100, 1.0);
  a.set_test_accuracy(0.8);
  v1::WorkerReport b = Report(20, 100, 1.0);
  v1::WorkerReport m = MergeReports(a, b);
  ASSERT_TRUE(m.has_test_accuracy());
  EXPECT_DOUBLE_EQ(m.test_accuracy(), 0.8);
  b.set_test_accuracy(0.9);
  EXPECT_DOUBLE_EQ(MergeReports(a, b).test_accuracy(), 0.9);
}

TEST(MergeReportsTest, AZeroIntervalKeepsTheLatestRate) {
  v1::WorkerReport a = Report(10, 0, 1.0);
  a.set_interval_s(0);
  v1::WorkerReport b = a;
  b.set_samples_per_sec(42);
  EXPECT_DOUBLE_EQ(MergeReports(a, b).samples_per_sec(), 42);
}

TEST(MergeReportsTest, APhaseReportMovesThePhaseOnAndKeepsTheIntervalsMetrics) {
  v1::WorkerReport a = Report(16, 256, 2.0);
  a.set_kind(v1::WorkerReport::STEP);
  a.set_phase(v1::WorkerReport::TRAINING);
  a.set_loss(0.5);
  a.set_accuracy(0.75);
  a.set_total_steps(32);
  a.set_checkpoint_step(8);
  v1::WorkerReport p;
  p.set_kind(v1::WorkerReport::PHASE);
  p.set_phase(v1::WorkerReport::EVALUATING);
  p.set_rank(1);
  p.set_step(16);
  p.set_total_steps(32);
  p.set_checkpoint_step(8);

  v1::WorkerReport m = MergeReports(a, p);
  EXPECT_EQ(m.phase(), v1::WorkerReport::EVALUATING);
  EXPECT_EQ(m.kind(), v1::WorkerReport::STEP);
  EXPECT_EQ(m.step(), 16);
  EXPECT_EQ(m.samples(), 256);
  EXPECT_DOUBLE_EQ(m.interval_s(), 2.0);
  EXPECT_DOUBLE_EQ(m.samples_per_sec(), 128.0);
  EXPECT_DOUBLE_EQ(m.loss(), 0.5);
  ASSERT_TRUE(m.has_accuracy());
  EXPECT_EQ(m.total_steps(), 32);
  EXPECT_EQ(m.checkpoint_step(), 8);

  // A report after the phase change is taken as usual and carries its own phase.
  v1::WorkerReport e = Report(16, 0, 0.1);
  e.set_kind(v1::WorkerReport::EPOCH);
  e.set_phase(v1::WorkerReport::TRAINING);
  e.set_test_accuracy(0.8);
  v1::WorkerReport m2 = MergeReports(m, e);
  EXPECT_EQ(m2.kind(), v1::WorkerReport::EPOCH);
  EXPECT_EQ(m2.phase(), v1::WorkerReport::TRAINING);
  EXPECT_EQ(m2.samples(), 256);

  // Phase reports alone stay phase reports.
  v1::WorkerReport q = p;
  q.set_phase(v1::WorkerReport::CHECKPOINTING);
  EXPECT_EQ(MergeReports(p, q).kind(), v1::WorkerReport::PHASE);
  EXPECT_EQ(MergeReports(p, q).phase(), v1::WorkerReport::CHECKPOINTING);
  EXPECT_EQ(MergeReports(p, q).samples(), 0);
}

TEST(MergeReportsTest, AStepReportAfterACheckpointKeepsItsStepAndTheTotal) {
  // As the Python package sends them: the total once, a checkpoint once, then plain steps.
  v1::WorkerReport total;
  total.set_kind(v1::WorkerReport::PHASE);
  total.set_total_steps(20);
  v1::WorkerReport saved;
  saved.set_kind(v1::WorkerReport::PHASE);
  saved.set_step(10);
  saved.set_checkpoint_step(10);
  v1::WorkerReport step = Report(11, 32, 0.05);
  v1::WorkerReport m = MergeReports(MergeReports(MergeReports(Report(9, 32, 0.05), total), saved), step);
  EXPECT_EQ(m.step(), 11);
  EXPECT_EQ(m.checkpoint_step(), 10);
  EXPECT_EQ(m.total_steps(), 20);
  EXPECT_EQ(m.samples(), 64);
}

v1::WorkerReport PhaseEnd(const std::string& name, double unix_s, double seconds) {
  v1::WorkerReport r;
  r.set_kind(v1::WorkerReport::PHASE);
  r.set_rank(1);
  v1::PhaseEvent* e = r.mutable_phase_log()->add_events();
  e->set_name(name);
  e->set_end(true);
  e->set_unix_s(unix_s);
  e->set_seconds(seconds);
  return r;
}

TEST(MergeReportsTest, PhasesShorterThanAHeartbeatKeepTheirLengthsInOrder) {
  // Between two heartbeats: a step, a checkpoint of 0.2 s, a step, an evaluation of 0.1 s.
  v1::WorkerReport m = Report(10, 32, 0.5);
  m = MergeReports(m, PhaseEnd("checkpoint", 1000.2, 0.2));
  m = MergeReports(m, Report(11, 32, 0.5));
  m = MergeReports(m, PhaseEnd("eval", 1000.9, 0.1));
  EXPECT_EQ(m.step(), 11);
  EXPECT_EQ(m.samples(), 64);
  ASSERT_EQ(m.phase_log().events_size(), 2);
  EXPECT_EQ(m.phase_log().events(0).name(), "checkpoint");
  EXPECT_DOUBLE_EQ(m.phase_log().events(0).seconds(), 0.2);
  EXPECT_EQ(m.phase_log().events(1).name(), "eval");
  EXPECT_DOUBLE_EQ(m.phase_log().events(1).unix_s(), 1000.9);
  EXPECT_EQ(m.phase_log().dropped(), 0);
  // Reports without phases make none up.
  EXPECT_FALSE(MergeReports(Report(1, 1, 1), Report(2, 1, 1)).has_phase_log());
}

TEST(MergeReportsTest, PhaseEventsPastTheBoundAreCounted) {
  v1::WorkerReport m = Report(1, 1, 1);
  for (int i = 0; i < kMaxPhaseEvents + 5; ++i) m = MergeReports(m, PhaseEnd("data", 1000 + i, 0.01));
  EXPECT_EQ(m.phase_log().events_size(), kMaxPhaseEvents);
  EXPECT_EQ(m.phase_log().dropped(), 5);
  EXPECT_DOUBLE_EQ(m.phase_log().events(0).unix_s(), 1000);  // the first ones are kept
  m = MergeReports(m, Report(2, 1, 1));
  EXPECT_EQ(m.phase_log().dropped(), 5);
}

TEST(MergeReportsTest, APhaseOfTheScriptsOwnNameLeavesTheRanksPhase) {
  v1::WorkerReport a = Report(16, 256, 2.0);
  a.set_phase(v1::WorkerReport::EVALUATING);
  v1::WorkerReport own = PhaseEnd("warmup", 1000, 1);  // no enum for it
  EXPECT_EQ(MergeReports(a, own).phase(), v1::WorkerReport::EVALUATING);
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

// Connects to the Unix socket at `path`; -1 on failure.
int ConnectTo(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  path.copy(addr.sun_path, sizeof(addr.sun_path) - 1);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

TEST(ReportServerTest, ALineWithoutANewlineIsRefusedOnceItPassesTheBound) {
  // A worker writing 8 MiB without a newline: the agent holds at most the bound, says why the
  // connection ends, and closes it; the reports before it were read.
  char dir[] = "/tmp/dlaunch-report-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/report.sock";
  boost::asio::io_context io;
  std::vector<v1::WorkerReport> reports;
  std::vector<std::string> bad;
  ReportServer server(io, [](pid_t) { return 3; },
                      [&](const v1::WorkerReport& r) { reports.push_back(r); },
                      [&](int rank, const std::string& error) {
                        bad.push_back(std::to_string(rank) + ": " + error);
                      });
  ASSERT_TRUE(server.Listen(path).ok());
  const int fd = ConnectTo(path);
  ASSERT_GE(fd, 0);
  std::thread writer([fd] {
    const std::string first = "{\"step\": 1}\n";
    ssize_t ignored = write(fd, first.data(), first.size());
    const std::string chunk(64 << 10, 'x');
    for (int i = 0; i < 128; ++i) {
      // Closed by the agent: EPIPE, without the SIGPIPE that would end the test.
      if (send(fd, chunk.data(), chunk.size(), MSG_NOSIGNAL) < 0) break;
    }
    (void)ignored;
    close(fd);
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (bad.empty() && std::chrono::steady_clock::now() < deadline) {
    io.run_for(std::chrono::milliseconds(50));
  }
  writer.join();
  unlink(path.c_str());
  rmdir(dir);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].step(), 1);
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0], "3: a report line longer than 1048576 bytes without a newline; connection "
                    "closed");
  EXPECT_EQ(server.open_connections(), 0);
}

}  // namespace
}  // namespace dlaunch
