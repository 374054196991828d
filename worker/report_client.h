// ReportClient: sends dlaunch.v1.WorkerReport messages to the agent, one protobuf-JSON line
// per message on the Unix stream socket named by DLAUNCH_REPORT_SOCKET; without a socket the
// same line goes to stdout, so a hand-run worker shows what an agent would see. Reporting
// never stops training: a send that fails drops the connection and falls back to stdout.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dlaunch/report.pb.h"

namespace dlaunch::worker {

// The JSON line (without the newline) for one report, snake_case field names.
absl::StatusOr<std::string> ReportToJson(const dlaunch::v1::WorkerReport& report);

class ReportClient {
 public:
  // socket_path empty: stdout. A socket that cannot be reached is an Unavailable error.
  static absl::StatusOr<ReportClient> Connect(const std::string& socket_path);

  ReportClient(ReportClient&& other) noexcept;
  ReportClient& operator=(ReportClient&& other) noexcept;
  ReportClient(const ReportClient&) = delete;
  ReportClient& operator=(const ReportClient&) = delete;
  ~ReportClient();

  void Send(const dlaunch::v1::WorkerReport& report);

 private:
  explicit ReportClient(int fd) : fd_(fd) {}
  int fd_;  // -1: stdout
};

}  // namespace dlaunch::worker
