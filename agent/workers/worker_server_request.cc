#include "agent/workers/worker_server_request.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace dlaunch {
namespace {

// The worker server's answer is the whole stack dump; far more is not one.
constexpr size_t kMaxResponse = 16 << 20;

}  // namespace

WorkerServerRequest::WorkerServerRequest(boost::asio::io_context& io, Callback done)
    : socket_(io), done_(std::move(done)) {}

std::shared_ptr<WorkerServerRequest> WorkerServerRequest::Start(boost::asio::io_context& io,
                                                                const std::string& socket_path,
                                                                const std::string& handler,
                                                                Callback done) {
  std::shared_ptr<WorkerServerRequest> r(new WorkerServerRequest(io, std::move(done)));
  // An empty body with its length: without it the server waits for one until its read timeout.
  r->request_ = absl::StrCat("POST /handler/", handler, " HTTP/1.1\r\nHost: localhost\r\n",
                             "Content-Length: 0\r\nConnection: close\r\n\r\n");
  r->socket_.async_connect(
      boost::asio::local::stream_protocol::endpoint(socket_path),
      [r, socket_path](const boost::system::error_code& ec) {
        if (!r->done_) return;
        if (ec) {
          r->Finish(absl::UnavailableError(absl::StrCat("connect ", socket_path, ": ", ec.message())));
          return;
        }
        boost::asio::async_write(r->socket_, boost::asio::buffer(r->request_),
                                 [r](const boost::system::error_code& wec, size_t) {
                                   if (!r->done_) return;
                                   if (wec) {
                                     r->Finish(absl::UnavailableError(
                                         absl::StrCat("write: ", wec.message())));
                                   } else {
                                     r->ReadSome();
                                   }
                                 });
      });
  return r;
}

void WorkerServerRequest::ReadSome() {
  auto self = shared_from_this();
  socket_.async_read_some(boost::asio::buffer(buffer_),
                          [self](const boost::system::error_code& ec, size_t n) {
                            if (!self->done_) return;
                            self->response_.append(self->buffer_, n);
                            if (ec == boost::asio::error::eof) {
                              self->Finish(ParseResponse(self->response_));
                            } else if (ec) {
                              self->Finish(absl::UnavailableError(absl::StrCat("read: ", ec.message())));
                            } else if (self->response_.size() > kMaxResponse) {
                              self->Finish(absl::ResourceExhaustedError("answer too long"));
                            } else {
                              self->ReadSome();
                            }
                          });
}

void WorkerServerRequest::Cancel() {
  done_ = nullptr;
  boost::system::error_code ignored;
  socket_.close(ignored);
}

void WorkerServerRequest::Finish(absl::StatusOr<std::string> body) {
  Callback done = std::move(done_);
  done_ = nullptr;
  boost::system::error_code ignored;
  socket_.close(ignored);
  if (done) done(std::move(body));
}

absl::StatusOr<std::string> WorkerServerRequest::ParseResponse(absl::string_view response) {
  const size_t head_end = response.find("\r\n\r\n");
  if (head_end == absl::string_view::npos) return absl::DataLossError("no complete HTTP answer");
  absl::string_view status_line = response.substr(0, response.find("\r\n"));
  absl::string_view body = response.substr(head_end + 4);
  // "HTTP/1.1 200 OK"
  const size_t sp = status_line.find(' ');
  int code = 0;
  if (sp == absl::string_view::npos || !absl::SimpleAtoi(status_line.substr(sp + 1, 3), &code)) {
    return absl::DataLossError(absl::StrCat("not an HTTP answer: ", status_line));
  }
  if (code != 200) {
    return absl::UnavailableError(absl::StrCat(
        "HTTP ", code, ": ", absl::StripAsciiWhitespace(body.substr(0, 200))));
  }
  return std::string(body);
}

}  // namespace dlaunch
