// One request to a PyTorch worker server (torch.distributed.elastic.control_plane): HTTP/1.1
// `POST /handler/<name>` on the rank's Unix socket (TORCH_WORKER_SERVER_SOCKET), the body of a
// 200 answer back. Non-blocking on the io_context; the caller bounds it with Cancel, after which
// the callback does not run. Runs on the io_context's thread.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <boost/asio.hpp>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dlaunch {

class WorkerServerRequest : public std::enable_shared_from_this<WorkerServerRequest> {
 public:
  using Callback = std::function<void(absl::StatusOr<std::string> body)>;

  // "dump_traceback" answers with every Python thread's stack (faulthandler's form).
  static std::shared_ptr<WorkerServerRequest> Start(boost::asio::io_context& io,
                                                    const std::string& socket_path,
                                                    const std::string& handler, Callback done);
  void Cancel();

  // The body of a whole HTTP response read to its end; an error for another status.
  static absl::StatusOr<std::string> ParseResponse(absl::string_view response);

 private:
  WorkerServerRequest(boost::asio::io_context& io, Callback done);
  void Finish(absl::StatusOr<std::string> body);
  void ReadSome();

  boost::asio::local::stream_protocol::socket socket_;
  Callback done_;
  std::string request_;
  std::string response_;
  char buffer_[16384];
};

}  // namespace dlaunch
