// dlaunch-relay: carries the control sessions of a group of agents to the launcher over one
// stream (docs/relays.md). Agents talk to it as to the launcher (the same Control service, the
// same TLS pin, the same token); it forwards Preflight and Join calls unchanged, and multiplexes
// every agent's Session onto its one Relay stream, batching what arrives while a write is in
// flight, both ways. It decides nothing: every message and command is the agent's or the
// launcher's own, in order. When its stream to the launcher ends, every agent's session ends
// with it (an agent then stops its workers, as when the launcher is gone).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include <grpcpp/grpcpp.h>

#include "absl/status/statusor.h"
#include "dlaunch/control.grpc.pb.h"
#include "proto/callback_server.h"
#include "proto/control_tls.h"

namespace dlaunch {

class SessionOutbox;
class RelayUpstream;

struct RelayOptions {
  std::string upstream;              // the launcher's control endpoint, HOST:PORT
  std::string listen = "0.0.0.0:0";  // where agents connect
  JobCredentials credentials;        // the token file's: token, and the pinned certificate
  std::string name;                  // what the launcher calls this relay ("relay 0")
};

// The most bytes of agents' messages in one RelayUp write; more wait for the next write.
inline constexpr size_t kRelayUpMaxBytes = 4u << 20;
// How long a message waits at most for others to go up in the same write (docs/relays.md).
inline constexpr std::chrono::milliseconds kRelayUpLinger{10};

struct RelayCounts {
  int64_t sessions = 0;      // agent sessions opened through the relay
  int64_t entries_up = 0;    // RelayEntry sent up
  int64_t writes_up = 0;     // RelayUp writes
  int64_t commands_down = 0; // commands handed to agents' sessions
  int64_t writes_down = 0;   // RelayDown messages read
  int64_t refused = 0;       // calls without the job's token
  int64_t undeliverable = 0; // commands for a session that had already ended
};

class Relay final : public v1::Control::CallbackService {
 public:
  // Gets the relay's certificate from the launcher (TLS jobs), opens the stream to it, then
  // listens for agents. Fails, saying why, when the launcher cannot be reached or refuses.
  static absl::StatusOr<std::unique_ptr<Relay>> Start(RelayOptions options);
  ~Relay() override;

  int port() const { return port_; }
  // Blocks until the stream to the launcher has ended (or Stop was called); returns why.
  grpc::Status Wait();
  // Ends the stream to the launcher and every agent's session. Any thread; returns at once.
  void Stop();
  RelayCounts counts() const;

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

  // For the relay's parts (not for callers).
  void Deliver(int child, v1::LauncherCommand command);
  void UpstreamEnded(const grpc::Status& status);
  void ChildEnded(int child);
  void Forget(int child);
  RelayUpstream* upstream() { return upstream_.get(); }
  const std::string& token() const { return options_.credentials.token; }
  const std::string& name() const { return options_.name; }
  std::atomic<int64_t> commands_down{0}, writes_down{0}, undeliverable{0};

 private:
  explicit Relay(RelayOptions options);
  bool Authorized(grpc::CallbackServerContext* ctx, const char* method);

  const RelayOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Control::Stub> stub_;
  std::unique_ptr<RelayUpstream> upstream_;
  std::unique_ptr<CallbackServer> server_;
  int port_ = 0;

  mutable std::mutex mu_;
  std::condition_variable ended_cv_;
  bool upstream_done_ = false;  // its OnDone has begun
  bool ended_ = false;          // ... and every session was told
  grpc::Status end_status_;
  std::unordered_map<int, std::shared_ptr<SessionOutbox>> children_;
  int next_child_ = 0;
  int64_t sessions_ = 0;
  std::atomic<int64_t> refused_{0};
};

}  // namespace dlaunch
