// A started gRPC server of callback services (the launcher's control endpoint, a relay's), served
// on every gRPC dlaunch builds with. gRPC before 1.37 (Debian 11 has 1.30) has no thread of its
// own that polls the callback API's completion queue: a server with only callback methods never
// accepts a connection, and its agents never join. There the server gets a completion queue of
// ours, registered as frequently polled, and threads that poll it: the listening sockets and
// every connection they accept are in its poll set, and the callbacks run from that polling.
// On newer gRPC the library polls its own queue and no thread is added.
#pragma once

#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include <grpcpp/completion_queue.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>

namespace dlaunch {

class CallbackServer {
 public:
  // Whether the gRPC this was built with polls the callback API's queue itself (1.37 and later).
  static bool GrpcPollsCallbacks();

  // Builds and starts the builder's server, with polling threads where gRPC has none; nullptr if
  // gRPC could not (no port bound is the caller's check).
  static std::unique_ptr<CallbackServer> BuildAndStart(grpc::ServerBuilder& builder);
  // The same with the threads or without: tests prove the threads' path on any gRPC with it.
  static std::unique_ptr<CallbackServer> BuildAndStart(grpc::ServerBuilder& builder,
                                                       bool own_polling);
  ~CallbackServer();  // Shutdown(now) unless it has run
  CallbackServer(const CallbackServer&) = delete;
  CallbackServer& operator=(const CallbackServer&) = delete;

  // The server's Shutdown (calls still running get until `deadline`), then the polling threads
  // end. Later calls do nothing.
  void Shutdown(std::chrono::system_clock::time_point deadline);
  grpc::Server* server() const { return server_.get(); }
  int polling_threads() const { return static_cast<int>(pollers_.size()); }

 private:
  CallbackServer() = default;

  std::unique_ptr<grpc::ServerCompletionQueue> cq_;  // polled by pollers_, when they exist
  std::unique_ptr<grpc::Server> server_;
  std::vector<std::thread> pollers_;
  bool shut_down_ = false;
};

}  // namespace dlaunch
