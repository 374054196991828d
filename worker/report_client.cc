#include "worker/report_client.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "dlaunch/report.pb.h"
#include "google/protobuf/util/json_util.h"

namespace dlaunch::worker {

void ToWorkerReport(const TrainerReport& in, dlaunch::v1::WorkerReport* r) {
  switch (in.kind) {
    case TrainerReport::Kind::kStep: r->set_kind(v1::WorkerReport::STEP); break;
    case TrainerReport::Kind::kEpoch: r->set_kind(v1::WorkerReport::EPOCH); break;
    case TrainerReport::Kind::kFinal: r->set_kind(v1::WorkerReport::FINAL); break;
    case TrainerReport::Kind::kPhase: r->set_kind(v1::WorkerReport::PHASE); break;
  }
  switch (in.phase) {
    case TrainerReport::Phase::kUnspecified: break;
    case TrainerReport::Phase::kLoadingData: r->set_phase(v1::WorkerReport::LOADING_DATA); break;
    case TrainerReport::Phase::kTraining: r->set_phase(v1::WorkerReport::TRAINING); break;
    case TrainerReport::Phase::kEvaluating: r->set_phase(v1::WorkerReport::EVALUATING); break;
    case TrainerReport::Phase::kCheckpointing:
      r->set_phase(v1::WorkerReport::CHECKPOINTING);
      break;
  }
  r->set_rank(in.rank);
  r->set_step(in.step);
  r->set_epoch(in.epoch);
  r->set_samples(in.samples);
  r->set_interval_s(in.interval_s);
  r->set_loss(in.loss);
  if (in.accuracy) r->set_accuracy(*in.accuracy);
  if (in.test_accuracy) r->set_test_accuracy(*in.test_accuracy);
  r->set_samples_per_sec(in.samples_per_sec);
  if (in.kind != TrainerReport::Kind::kPhase) {  // a phase change covers no steps
    r->mutable_timings()->set_data_ms(in.data_ms);
    r->mutable_timings()->set_forward_ms(in.forward_ms);
    r->mutable_timings()->set_backward_ms(in.backward_ms);
    r->mutable_timings()->set_optimizer_ms(in.optimizer_ms);
  }
  r->set_message(in.message);
  r->set_checkpoint_step(in.checkpoint_step);
  r->set_total_steps(in.total_steps);
}

absl::StatusOr<std::string> ReportToJson(const dlaunch::v1::WorkerReport& report) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  std::string json;
  const auto status = google::protobuf::util::MessageToJsonString(report, &json, options);
  if (!status.ok()) {
    return absl::InternalError(absl::StrCat("cannot encode report: ", status.ToString()));
  }
  return json;
}

absl::StatusOr<int> ConnectReportSocket(const std::string& socket_path) {
  sockaddr_un addr{};
  if (socket_path.empty() || socket_path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(
        absl::StrCat("DLAUNCH_REPORT_SOCKET is empty or too long: \"", socket_path, "\""));
  }
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size());
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("socket(): ", std::strerror(errno)));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    const int e = errno;
    ::close(fd);
    return absl::UnavailableError(absl::StrCat("cannot connect to DLAUNCH_REPORT_SOCKET ",
                                               socket_path, ": ", std::strerror(e)));
  }
  return fd;
}

absl::StatusOr<ReportClient> ReportClient::Connect(const std::string& socket_path) {
  if (socket_path.empty()) return ReportClient(-1);
  absl::StatusOr<int> fd = ConnectReportSocket(socket_path);
  if (!fd.ok()) return fd.status();
  return ReportClient(*fd);
}

ReportClient::ReportClient(ReportClient&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }

ReportClient& ReportClient::operator=(ReportClient&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

ReportClient::~ReportClient() {
  if (fd_ >= 0) ::close(fd_);
}

void ReportClient::Send(const TrainerReport& report) {
  v1::WorkerReport message;
  ToWorkerReport(report, &message);
  Send(message);
}

void ReportClient::Send(const dlaunch::v1::WorkerReport& report) {
  absl::StatusOr<std::string> json = ReportToJson(report);
  if (!json.ok()) {
    std::fprintf(stderr, "dlaunch-worker: %s\n", json.status().ToString().c_str());
    return;
  }
  std::string line = *json + "\n";
  if (fd_ >= 0) {
    size_t off = 0;
    while (off < line.size()) {
      const ssize_t n = ::send(fd_, line.data() + off, line.size() - off, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        std::fprintf(stderr, "dlaunch-worker: report socket failed (%s); reporting on stdout\n",
                     std::strerror(errno));
        ::close(fd_);
        fd_ = -1;
        break;
      }
      off += static_cast<size_t>(n);
    }
    if (fd_ >= 0) return;
  }
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fflush(stdout);
}

}  // namespace dlaunch::worker
