// ControlService: the launcher's gRPC endpoint (proto/control.proto). A thin adapter: it checks
// the job token on every call, runs Join against a thread-safe rendezvous, and hands session
// streams to a SessionHandler (the job controller), which owns all decisions.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include <grpcpp/grpcpp.h>

#include "dlaunch/control.grpc.pb.h"
#include "rendezvous/rendezvous_state.h"

namespace dlaunch {

// One agent's open session stream. Send may be called from any thread.
class AgentSession {
 public:
  explicit AgentSession(grpc::ServerReaderWriter<v1::LauncherCommand, v1::AgentMessage>* stream)
      : stream_(stream) {}
  bool Send(const v1::LauncherCommand& cmd);
  void Detach();   // the stream is gone; later sends are dropped
  std::string agent_id;
  int node_rank = -1;

 private:
  std::mutex mu_;
  grpc::ServerReaderWriter<v1::LauncherCommand, v1::AgentMessage>* stream_;
};

// What the service reports to the job controller. Called on gRPC threads.
class SessionHandler {
 public:
  virtual ~SessionHandler() = default;
  virtual void OnJoined(const Participant& p, int joined, int expected) = 0;
  virtual void OnRendezvousClosed(const RoundResult& result) = 0;
  virtual void OnRendezvousFailed(const absl::Status& status) = 0;
  virtual void OnSessionOpened(std::shared_ptr<AgentSession> session) = 0;
  virtual void OnAgentMessage(const std::shared_ptr<AgentSession>& session,
                              const v1::AgentMessage& msg) = 0;
  virtual void OnSessionEnded(const std::shared_ptr<AgentSession>& session) = 0;
  virtual void OnRefused(const std::string& peer, const std::string& method) = 0;
};

class ControlService final : public v1::Control::Service {
 public:
  // `response_template` holds the job-wide fields of every JoinResponse.
  ControlService(std::string token, RendezvousConfig config, v1::JoinResponse response_template,
                 SessionHandler* handler);

  grpc::Status Join(grpc::ServerContext* ctx, const v1::JoinRequest* req,
                    v1::JoinResponse* resp) override;
  grpc::Status Session(
      grpc::ServerContext* ctx,
      grpc::ServerReaderWriter<v1::LauncherCommand, v1::AgentMessage>* stream) override;

  // Advances rendezvous deadlines when no Join is waiting (e.g. nobody ever joined).
  void PollRendezvous();
  // Wakes and fails every waiting Join (the launcher is shutting down).
  void Shutdown();

 private:
  bool Authorized(grpc::ServerContext* ctx, const char* method);
  double Now() const;
  void ReportOutcomeLocked();

  const std::string token_;
  const v1::JoinResponse template_;
  SessionHandler* handler_;
  const std::chrono::steady_clock::time_point start_;

  std::mutex mu_;
  std::condition_variable cv_;
  RendezvousState state_;
  bool outcome_reported_ = false;
  bool shutting_down_ = false;
};

}  // namespace dlaunch
