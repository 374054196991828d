// A started gRPC server of callback services (the launcher's control endpoint, a relay's), served
// on every gRPC dlaunch builds with.
//
// gRPC before 1.37 (Debian 11 has 1.30) has no thread of its own that polls the callback API's
// completion queue: nothing polls the sockets of a callback server or of a callback call, so a
// launcher built on it never accepts a connection and its agents never join. There the server
// gets a completion queue of ours and threads that poll it (CallbackServer), and the process
// uses gRPC's epoll1 engine (InitGrpcForCallbacks), whose one epoll set holds every socket:
// with 1.30's default, epollex, a queue polls only the sockets handed to it, and gRPC hands the
// callback queue, which no thread polls, the listening socket (or its SO_REUSEPORT clone), every
// second connection accepted, and the sockets of callback calls (a relay's upstream stream). On
// newer gRPC the library polls its own queue, and both do nothing.
#pragma once

#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include <grpcpp/completion_queue.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>

namespace dlaunch {

// On gRPC before 1.37: initializes gRPC with the epoll1 polling engine for the rest of the
// process (whatever GRPC_POLL_STRATEGY says: the engine is chosen at the first initialization,
// and the variable is put back as it was, for the processes this one starts). Call early in main
// in a process that serves or makes callback calls, before any gRPC object exists, and after
// blocking the signals the process takes with sigwait: gRPC's threads start here, with the mask
// of the moment (a relay's SIGTERM on one of them would end it mid-sentence).
void InitGrpcForCallbacks();

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
