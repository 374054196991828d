// ReportClient: sends dlaunch.v1.WorkerReport messages to the agent, one protobuf-JSON line
// per message on the Unix stream socket named by DLAUNCH_REPORT_SOCKET; without a socket the
// same line goes to stdout, so a hand-run worker shows what an agent would see. Reporting
// never stops training: a send that fails drops the connection and falls back to stdout.
//
// The trainer hands it a TrainerReport, a plain struct: the LibTorch translation units never
// include protobuf headers, because a PyTorch wheel ships its own, older protobuf headers inside
// its include directory, which would shadow the system's that report.pb.h was generated for.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace dlaunch::v1 {
class WorkerReport;
}  // namespace dlaunch::v1

namespace dlaunch::worker {

// One report as the trainer knows it; see proto/report.proto for each field's meaning.
struct TrainerReport {
  enum class Kind { kStep, kEpoch, kFinal, kPhase };
  // What the worker is doing; docs/worker.md lists when each is entered.
  enum class Phase { kUnspecified, kLoadingData, kTraining, kEvaluating, kCheckpointing };
  Kind kind = Kind::kStep;
  Phase phase = Phase::kUnspecified;
  int rank = 0;
  int64_t step = 0;
  int32_t epoch = 0;
  int64_t samples = 0;
  double interval_s = 0;
  double loss = 0;
  std::optional<double> accuracy;
  std::optional<double> test_accuracy;
  double samples_per_sec = 0;
  double data_ms = 0, forward_ms = 0, backward_ms = 0, optimizer_ms = 0;
  std::string message;
  int64_t checkpoint_step = 0;
  int64_t total_steps = 0;
};

// The WorkerReport message of a TrainerReport.
void ToWorkerReport(const TrainerReport& in, dlaunch::v1::WorkerReport* out);

// The JSON line (without the newline) for one report, snake_case field names.
absl::StatusOr<std::string> ReportToJson(const dlaunch::v1::WorkerReport& report);

// A connected stream socket to the agent's report socket (DLAUNCH_REPORT_SOCKET), close-on-exec;
// the caller owns the descriptor. The reports and the restart lines each open one.
absl::StatusOr<int> ConnectReportSocket(const std::string& socket_path);

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
  void Send(const TrainerReport& report);

 private:
  explicit ReportClient(int fd) : fd_(fd) {}
  int fd_;  // -1: stdout
};

}  // namespace dlaunch::worker
