#include "proto/callback_server.h"

#include <stdlib.h>

#include <algorithm>
#include <optional>
#include <string>

#include <grpc/grpc.h>
#include <grpc/impl/codegen/grpc_types.h>

namespace dlaunch {
namespace {

// Half the cores, at least two, as gRPC 1.37's own callback pollers: they carry every agent
// connection's reads and writes, and the callbacks run on them or on gRPC's executor.
int PollingThreads() {
  return std::max(2, static_cast<int>(std::thread::hardware_concurrency() / 2));
}

}  // namespace

void InitGrpcForCallbacks() {
  if (CallbackServer::GrpcPollsCallbacks()) return;
  const char* set = getenv("GRPC_POLL_STRATEGY");
  const std::optional<std::string> was = set ? std::optional<std::string>(set) : std::nullopt;
  setenv("GRPC_POLL_STRATEGY", "epoll1", 1);
  grpc_init();  // never shut down: the engine chosen here stays the process's
  if (was) {
    setenv("GRPC_POLL_STRATEGY", was->c_str(), 1);
  } else {
    unsetenv("GRPC_POLL_STRATEGY");
  }
}

bool CallbackServer::GrpcPollsCallbacks() {
#ifdef DLAUNCH_GRPC_UNPOLLED_CALLBACK_CQ
  return false;
#else
  return true;
#endif
}

std::unique_ptr<CallbackServer> CallbackServer::BuildAndStart(grpc::ServerBuilder& builder) {
  return BuildAndStart(builder, !GrpcPollsCallbacks());
}

std::unique_ptr<CallbackServer> CallbackServer::BuildAndStart(grpc::ServerBuilder& builder,
                                                              bool own_polling) {
  std::unique_ptr<CallbackServer> s(new CallbackServer);
  if (own_polling) {
    s->cq_ = builder.AddCompletionQueue(/*is_frequently_polled=*/true);
    // With two polled queues gRPC 1.30 clones the listening socket with SO_REUSEPORT, and the
    // clone of a port-0 listener gets a port of its own, open to no purpose: one socket.
    builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  }
  s->server_ = builder.BuildAndStart();
  if (!s->server_) {
    if (s->cq_) {  // a queue must be shut down and drained before it goes
      s->cq_->Shutdown();
      void* tag;
      bool ok;
      while (s->cq_->Next(&tag, &ok)) {
      }
    }
    return nullptr;
  }
  if (s->cq_) {
    for (int i = PollingThreads(); i > 0; --i) {
      // No call is ever requested on this queue, so Next yields nothing until the shutdown: it is
      // the polling inside Next that serves the callback services.
      s->pollers_.emplace_back([cq = s->cq_.get()] {
        void* tag;
        bool ok;
        while (cq->Next(&tag, &ok)) {
        }
      });
    }
  }
  return s;
}

void CallbackServer::Shutdown(std::chrono::system_clock::time_point deadline) {
  if (shut_down_) return;
  shut_down_ = true;
  server_->Shutdown(deadline);  // polled meanwhile: the calls it waits for can end
  if (cq_) {
    cq_->Shutdown();  // after the server's, as gRPC requires; Next then returns false
    for (std::thread& t : pollers_) t.join();
    pollers_.clear();
  }
}

CallbackServer::~CallbackServer() { Shutdown(std::chrono::system_clock::now()); }

}  // namespace dlaunch
