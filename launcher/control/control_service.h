// ControlService: the launcher's gRPC endpoint (proto/control.proto) on gRPC's callback API. A
// thin adapter: it checks the job token on every call, translates, and posts each call onto
// the event loop, where a ControlHandler decides. No thread waits for a Join or stays with a
// session: Join is answered from the handler's reply callback, and commands to an agent go
// through a per-session queue with one write in flight, so sending never blocks the loop.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <boost/asio.hpp>
#include <grpcpp/grpcpp.h>

#include "dlaunch/control.grpc.pb.h"
#include "launcher/control/control_handler.h"
#include "proto/control_tls.h"

namespace dlaunch {

class ControlService final : public v1::Control::CallbackService {
 public:
  // `handler` runs on `io`'s thread.
  ControlService(std::string token, boost::asio::io_context& io, ControlHandler* handler);

  grpc::ServerUnaryReactor* Preflight(grpc::CallbackServerContext* ctx,
                                      const v1::PreflightRequest* req,
                                      v1::PreflightPlan* plan) override;
  grpc::ServerUnaryReactor* CollectiveCheck(grpc::CallbackServerContext* ctx,
                                            const v1::CollectiveCheckRequest* req,
                                            v1::CollectiveCheckResponse* resp) override;
  grpc::ServerUnaryReactor* Join(grpc::CallbackServerContext* ctx, const v1::JoinRequest* req,
                                 v1::JoinResponse* resp) override;
  grpc::ServerBidiReactor<v1::AgentMessage, v1::LauncherCommand>* Session(
      grpc::CallbackServerContext* ctx) override;
  grpc::ServerWriteReactor<v1::JobSnapshot>* Watch(grpc::CallbackServerContext* ctx,
                                                   const v1::WatchRequest* req) override;
  // A relay's stream: its agents' sessions, each handed to the handler as if it had its own
  // Session call (launcher/control/relay_reactor.h).
  grpc::ServerBidiReactor<v1::RelayUp, v1::RelayDown>* Relay(grpc::CallbackServerContext* ctx) override;
  grpc::ServerUnaryReactor* IssueCertificate(grpc::CallbackServerContext* ctx,
                                             const v1::CertificateRequest* req,
                                             v1::CertificateIssued* resp) override;

  // The job's key and certificate, which sign the certificates of the job's `relays` relays
  // (launcher/run/relay_launch.h): at most that many, and only for callers on this host, where
  // the launcher starts them. Null (the default): the job runs without TLS and IssueCertificate
  // is refused. Set before the server starts.
  void SetJobIdentity(const ControlIdentity* identity, int relays) {
    identity_ = identity;
    certificates_left_ = relays;
  }

  // What agents check before they join; set before the server starts (default: nothing). The
  // answer is made on gRPC's thread, with the launcher's clock stamped in it.
  void SetPreflightPlan(v1::PreflightPlan plan) { preflight_ = std::move(plan); }

  // Where CollectiveCheck calls go (on the loop: launcher/run/collective_check_host.h); without
  // one (the default) they are answered as skipped. Set before the server starts.
  void SetCollectiveCheckHandler(CollectiveCheckHandler* handler) { collective_ = handler; }

  // Where Watch calls go (on the loop); without one they are answered UNIMPLEMENTED.
  void SetWatchHandler(WatchHandler* handler) { watch_handler_ = handler; }

  // Stops posting to the loop: a Join that arrives later is answered CANCELLED at once. Call
  // once the loop has stopped, then run what was already posted (io.restart(); io.poll()) so
  // every waiting call gets its answer before the server shuts down.
  void StopPosting();

  // Runs `task` on the loop; false (and nothing runs) once StopPosting was called.
  bool Post(std::function<void()> task);
  ControlHandler* handler() const { return handler_; }
  // A number for a new session, unique within this service.
  int NewSessionId() { return next_session_id_++; }

 private:
  bool Authorized(grpc::CallbackServerContext* ctx, const char* method);
  // Runs what Post queued, in order, on the loop.
  void Drain();

  const std::string token_;
  boost::asio::io_context& io_;
  ControlHandler* handler_;
  WatchHandler* watch_handler_ = nullptr;
  v1::PreflightPlan preflight_;
  CollectiveCheckHandler* collective_ = nullptr;
  const ControlIdentity* identity_ = nullptr;
  std::atomic<int> certificates_left_{0};
  std::mutex mu_;  // orders Post against StopPosting, and guards the queue
  bool posting_ = true;
  std::vector<std::function<void()>> pending_;  // posted, not yet drained
  bool drain_posted_ = false;                    // a Drain is on the loop's queue
  std::atomic<int> next_session_id_{0};
  std::atomic<uint64_t> join_calls_{0};   // Join calls so far: each one's Participant::join_call
};

// Hands `msg` to `h`; a batch message by message, in order, as if each had come alone.
void HandleAgentMessageOrBatch(ControlHandler* h, int session_id, int node,
                               const v1::AgentMessage& msg);

}  // namespace dlaunch
