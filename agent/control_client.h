// ControlClient: the agent's side of the launcher's gRPC endpoint. Join is a blocking call;
// the session stream has a reader thread (commands down) and a writer thread (messages up),
// so a slow launcher never blocks the agent's event loop.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/status/statusor.h"
#include "dlaunch/control.grpc.pb.h"
#include "proto/control_credentials.h"
#include "proto/grpc_status.h"

namespace dlaunch {

class ControlClient {
 public:
  using OnCommand = std::function<void(const v1::LauncherCommand&)>;
  // `broken`: the stream failed (UNAVAILABLE: the peer or the link went), rather than being
  // ended by the launcher.
  using OnClosed = std::function<void(const std::string& why, bool broken)>;
  // What a session that broke had not had acknowledged (LauncherCommand.heard_seq): every
  // message but heartbeats and log lines, in order, and the next sequence number.
  struct Unsent {
    uint64_t last_seq = 0;
    std::vector<v1::AgentMessage> messages;
  };

  // TLS pinned to the job's certificate when `creds` has one, else plain TCP.
  ControlClient(const std::string& target, const JobCredentials& creds);
  ~ControlClient();

  // Calls fail at once with UNAVAILABLE when the server cannot be reached, instead of waiting
  // for it up to their timeout. For a relay, which listened before the agent was started: one
  // that refuses the connection is gone, and the agent should go to the launcher at once.
  void set_fail_fast(bool fail_fast) { fail_fast_ = fail_fast; }

  // What the node must check before it joins; waits for the launcher's server up to `timeout`.
  absl::StatusOr<v1::PreflightPlan> Preflight(const v1::PreflightRequest& request,
                                              std::chrono::milliseconds timeout);
  // One of the collective check's two calls (proto/control.proto); waits up to `timeout`.
  absl::StatusOr<v1::CollectiveCheckResponse> CollectiveCheck(
      const v1::CollectiveCheckRequest& request, std::chrono::milliseconds timeout);
  absl::StatusOr<v1::JoinResponse> Join(const v1::JoinRequest& request,
                                        std::chrono::milliseconds timeout);

  // Opens the session stream. Callbacks run on the reader thread; `on_closed` runs once.
  absl::Status OpenSession(OnCommand on_command, OnClosed on_closed);
  // Queues a message for the writer thread and wakes it. Log lines are dropped past a bound, so
  // a chatty worker cannot hold back heartbeats and events (Queue is then false).
  void Send(v1::AgentMessage message);
  // Queues without waking the writer, so that what follows goes up in the same write (an
  // AgentBatch); Wake (or the end of the write in flight) sends it.
  bool Queue(v1::AgentMessage message);
  void Wake();
  // The launcher has processed this agent's messages up to `seq`: they need not be kept.
  void Ack(uint64_t seq);
  // After Close: what this session did not have acknowledged (to send again elsewhere).
  Unsent TakeUnsent();
  // Before OpenSession: continue a session that moved here; `unsent` goes first.
  void Resume(Unsent unsent);
  // Sends what is queued, half-closes, and waits up to `timeout` for the launcher to end the
  // stream, then cancels it.
  void Close(std::chrono::milliseconds timeout);

 private:
  // One unary call with the token, a deadline, and waiting for the launcher's server to be up.
  template <typename Response, typename Method, typename Request>
  absl::StatusOr<Response> Unary(Method method, const Request& request,
                                 std::chrono::milliseconds timeout) {
    grpc::ClientContext ctx;
    ctx.AddMetadata(kTokenMetadataKey, token_);
    ctx.set_deadline(std::chrono::system_clock::now() + timeout);
    ctx.set_wait_for_ready(!fail_fast_);  // the launcher may still be starting its server
    Response response;
    grpc::Status s = (stub_.get()->*method)(&ctx, request, &response);
    if (!s.ok()) return FromGrpcStatus(s);
    return response;
  }

  void ReaderLoop(OnCommand on_command, OnClosed on_closed);
  void WriterLoop();

  std::string token_;
  bool fail_fast_ = false;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Control::Stub> stub_;

  std::unique_ptr<grpc::ClientContext> session_context_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::AgentMessage, v1::LauncherCommand>> stream_;
  std::thread reader_, writer_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<v1::AgentMessage> queue_;
  size_t queued_log_bytes_ = 0;  // of the log messages in queue_
  uint64_t last_seq_ = 0;         // AgentMessage.seq of the last message queued
  // Written, not yet acknowledged, kept to be sent again if the session moves: worker events,
  // round ends and stacks (not heartbeats or log lines), at most kMaxUnacked of them.
  std::deque<v1::AgentMessage> unacked_;
  bool closing_ = false;
  bool reader_done_ = false;
};

}  // namespace dlaunch
