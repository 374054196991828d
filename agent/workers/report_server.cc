#include "agent/workers/report_server.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <google/protobuf/util/json_util.h>

#include <cmath>

#include "absl/strings/str_cat.h"

namespace dlaunch {

namespace {

// A line's phase_name / phase_event / t / phase_s as one PhaseEvent of its report's phase log.
absl::Status ReadPhaseEvent(const std::string& line, v1::WorkerReport* out) {
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = true;
  v1::PhaseLine p;
  auto st = google::protobuf::util::JsonStringToMessage(line, &p, opts);
  if (!st.ok()) return absl::InvalidArgumentError(std::string(st.message()));
  if (p.phase_event().empty()) return absl::OkStatus();
  const bool end = p.phase_event() == "end";
  if (!end && p.phase_event() != "begin") {
    return absl::InvalidArgumentError(absl::StrCat("phase_event is \"begin\" or \"end\", not \"",
                                                   p.phase_event(), "\""));
  }
  if (p.phase_name().empty()) return absl::InvalidArgumentError("phase_event without a phase_name");
  if (!(p.t() > 0) || !std::isfinite(p.t())) {
    return absl::InvalidArgumentError("phase_event without a time t (Unix seconds)");
  }
  if (!(p.phase_s() >= 0) || !std::isfinite(p.phase_s())) {
    return absl::InvalidArgumentError("phase_s is a length in seconds, 0 or more");
  }
  v1::PhaseEvent* e = out->mutable_phase_log()->add_events();
  e->set_name(p.phase_name());
  e->set_end(end);
  e->set_unix_s(p.t());
  e->set_seconds(end ? p.phase_s() : 0);
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseReportLine(const std::string& line, v1::WorkerReport* out) {
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = true;
  auto st = google::protobuf::util::JsonStringToMessage(line, out, opts);
  if (!st.ok()) return absl::InvalidArgumentError(std::string(st.message()));
  // Most lines are steps: the second parse is paid only by the lines that name a phase event.
  if (line.find("phase_event") != std::string::npos) return ReadPhaseEvent(line, out);
  return absl::OkStatus();
}

class ReportServer::Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(ReportServer* server, boost::asio::local::stream_protocol::socket socket)
      : server_(server), socket_(std::move(socket)) {}

  void Start() {
    IdentifyPeer();
    Read();
  }

  void IdentifyPeer() {
    struct ucred cred {};
    socklen_t len = sizeof(cred);
    if (getsockopt(socket_.native_handle(), SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
      peer_rank_ = server_->rank_of_pid_(cred.pid);
    }
  }

 private:
  void Read() {
    auto self = shared_from_this();
    boost::asio::async_read_until(
        socket_, buffer_, '\n', [self](const boost::system::error_code& ec, size_t n) {
          if (ec == boost::asio::error::not_found) {  // the buffer is full, no newline in it
            self->server_->on_bad_line_(
                self->peer_rank_, absl::StrCat("a report line longer than ", kMaxReportLineBytes,
                                               " bytes without a newline; connection closed"));
            boost::system::error_code ignored;
            self->socket_.close(ignored);
          }
          if (ec) {  // the worker closed its end (or exited), or its line was too long
            if (ec != boost::asio::error::operation_aborted) {
              --self->server_->open_;
              if (self->server_->on_closed_) self->server_->on_closed_();
            }
            return;
          }
          std::string line(boost::asio::buffers_begin(self->buffer_.data()),
                            boost::asio::buffers_begin(self->buffer_.data()) + n - 1);
          self->buffer_.consume(n);
          self->Handle(line);
          self->Read();
        });
  }

  void Handle(const std::string& line) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) return;
    v1::WorkerReport report;
    auto st = ParseReportLine(line, &report);
    if (!st.ok()) {
      server_->on_bad_line_(peer_rank_, st.ToString());
      return;
    }
    if (peer_rank_ >= 0) report.set_rank(peer_rank_);
    server_->on_report_(report);
  }

  ReportServer* server_;
  boost::asio::local::stream_protocol::socket socket_;
  boost::asio::streambuf buffer_{kMaxReportLineBytes};
  int peer_rank_ = -1;
};

ReportServer::ReportServer(boost::asio::io_context& io, RankOfPid rank_of_pid, OnReport on_report,
                           OnBadLine on_bad_line)
    : io_(io),
      rank_of_pid_(std::move(rank_of_pid)),
      on_report_(std::move(on_report)),
      on_bad_line_(std::move(on_bad_line)) {}

ReportServer::~ReportServer() {
  if (acceptor_) {
    boost::system::error_code ec;
    acceptor_->close(ec);
  }
  if (!path_.empty()) unlink(path_.c_str());
}

absl::Status ReportServer::Listen(const std::string& path) {
  unlink(path.c_str());
  boost::system::error_code ec;
  acceptor_ = std::make_unique<boost::asio::local::stream_protocol::acceptor>(io_);
  acceptor_->open(boost::asio::local::stream_protocol(), ec);
  if (!ec) acceptor_->bind(boost::asio::local::stream_protocol::endpoint(path), ec);
  // Only the job's user (its workers) may connect.
  if (!ec && chmod(path.c_str(), 0600) != 0) ec.assign(errno, boost::system::system_category());
  if (!ec) acceptor_->listen(64, ec);
  if (ec) return absl::UnavailableError(absl::StrCat("report socket ", path, ": ", ec.message()));
  path_ = path;
  Accept();
  return absl::OkStatus();
}

void ReportServer::Accept() {
  acceptor_->async_accept([this](const boost::system::error_code& ec,
                                 boost::asio::local::stream_protocol::socket socket) {
    if (ec == boost::asio::error::operation_aborted) return;
    if (!ec) Adopt(std::move(socket));
    Accept();
  });
}

void ReportServer::Adopt(boost::asio::local::stream_protocol::socket socket) {
  ++open_;
  std::make_shared<Connection>(this, std::move(socket))->Start();
}

void ReportServer::AcceptPending() {
  if (!acceptor_) return;
  for (;;) {
    int fd = accept4(acceptor_->native_handle(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    boost::asio::local::stream_protocol::socket s(io_);
    boost::system::error_code ec;
    s.assign(boost::asio::local::stream_protocol(), fd, ec);
    if (ec) {
      close(fd);
      continue;
    }
    Adopt(std::move(s));
  }
}

}  // namespace dlaunch
