// ParseReportLine: how a worker's report line is read (snake and camel case, unknown fields
// ignored, a malformed line refused); the in-process restart's lines, and the server answering
// a worker on the connection its restart lines came from (a real Unix socket).
#include "agent/workers/report_server.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <string>
#include <vector>

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

TEST(RestartLineTest, OnlyARestartKeyMakesARestartLine) {
  EXPECT_TRUE(IsRestartLine(R"({"restart": "hello", "in_process": true})"));
  EXPECT_TRUE(IsRestartLine(R"({"round": 2, "restart" : "left"})"));
  // A phase named "restart" is a report.
  EXPECT_FALSE(IsRestartLine(R"({"phase_name": "restart", "phase_event": "begin", "t": 1})"));
  EXPECT_FALSE(IsRestartLine(R"({"step": 5})"));
  v1::RestartLine line;
  ASSERT_TRUE(ParseRestartLine(R"({"restart": "left", "round": 3})", &line).ok());
  EXPECT_EQ(line.round(), 3);
  ASSERT_TRUE(ParseRestartLine(R"({"restart": "cannot", "why": "a NaN"})", &line).ok());
  EXPECT_EQ(line.why(), "a NaN");
  EXPECT_EQ(ParseRestartLine(R"({"restart": "bye"})", &line).message(),
            "restart is \"hello\", \"left\", \"ready\" or \"cannot\", not \"bye\"");
}

int Connect(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  path.copy(addr.sun_path, sizeof(addr.sun_path) - 1);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  timeval limit{5, 0};  // a read that would hang fails the test instead
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
  return fd;
}

TEST(ReportServerTest, AnswersOnTheConnectionTheRestartLinesCameFrom) {
  boost::asio::io_context io;
  std::vector<v1::WorkerReport> reports;
  std::vector<std::pair<pid_t, std::string>> restarts;
  ReportServer server(
      io, [](pid_t pid) { return pid == getpid() ? 7 : -1; },
      [&](const v1::WorkerReport& r) { reports.push_back(r); }, [](int, const std::string&) {});
  server.set_on_restart_line(
      [&](pid_t pid, const v1::RestartLine& l) { restarts.emplace_back(pid, l.restart()); });
  const std::string path = "/tmp/dlaunch-report-test-" + std::to_string(getpid()) + ".sock";
  ASSERT_TRUE(server.Listen(path).ok());
  const int reports_fd = Connect(path);  // a script's reports on one connection
  const int restart_fd = Connect(path);  // the wrapper's restart lines on another
  const std::string report = "{\"step\": 4}\n";
  const std::string hello = "{\"restart\": \"hello\", \"in_process\": true}\n";
  ASSERT_EQ(write(reports_fd, report.data(), report.size()), static_cast<ssize_t>(report.size()));
  ASSERT_EQ(write(restart_fd, hello.data(), hello.size()), static_cast<ssize_t>(hello.size()));
  for (int i = 0; i < 200 && (reports.empty() || restarts.empty()); ++i) {
    io.run_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].rank(), 7);
  ASSERT_EQ(restarts.size(), 1u);
  EXPECT_EQ(restarts[0], std::make_pair(getpid(), std::string("hello")));
  EXPECT_EQ(server.open_connections_of(getpid()), 2);
  ASSERT_TRUE(server.Send(getpid(), R"({"restart": "leave", "round": 0})"));
  io.run_for(std::chrono::milliseconds(50));
  char buf[256] = {};
  const ssize_t n = read(restart_fd, buf, sizeof(buf) - 1);
  EXPECT_EQ(std::string(buf, n > 0 ? n : 0), "{\"restart\": \"leave\", \"round\": 0}\n");
  EXPECT_FALSE(server.Send(getpid() + 100000, "x"));  // no connection of that pid
  close(reports_fd);
  close(restart_fd);
  for (int i = 0; i < 200 && server.open_connections() > 0; ++i) {
    io.run_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(server.open_connections_of(getpid()), 0);
  EXPECT_FALSE(server.Send(getpid(), "x"));
}

}  // namespace
}  // namespace dlaunch
