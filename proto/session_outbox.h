// SessionOutbox: the commands queued for one agent's Session stream, with one write in flight;
// the next is started from OnWriteDone on gRPC's threads, so a sender never blocks. Used by the
// launcher for an agent connected to it and by a relay for each of its agents (docs/relays.md).
#pragma once

#include <deque>
#include <mutex>
#include <utility>

#include <grpcpp/grpcpp.h>
#include <grpcpp/support/server_callback.h>

#include "dlaunch/control.pb.h"

namespace dlaunch {

using SessionReactorBase = grpc::ServerBidiReactor<v1::AgentMessage, v1::LauncherCommand>;

// A Session refused as it opens (a wrong job token; a relay with no launcher to pass it to):
// finished with `status` at once, and deleted when gRPC is done with it.
class RefusedSession final : public SessionReactorBase {
 public:
  explicit RefusedSession(grpc::Status status) { Finish(std::move(status)); }
  void OnDone() override { delete this; }
};

// A command without a body renews the lease and says nothing else.
inline bool IsPing(const v1::LauncherCommand& c) { return !c.has_stop() && !c.has_start(); }

class SessionOutbox {
 public:
  explicit SessionOutbox(SessionReactorBase* reactor) : reactor_(reactor) {}

  // Queues `command` and returns at once; dropped once the stream has ended. A queued ping (not
  // the write in flight) says only the newest heard_ms, which every later command carries too:
  // it is replaced, so an agent that reads slowly gets its next stop or start after one write,
  // not after a ping for every second it fell behind.
  void Send(v1::LauncherCommand command);
  // From the reactor's OnWriteDone.
  void OnWriteDone(bool ok);
  // The agent's side ended (or the session is to end): drop what is queued and finish with
  // `status` once no write is in flight. Later calls do nothing.
  void Close(grpc::Status status = grpc::Status::OK);

 private:
  SessionReactorBase* const reactor_;  // outlives every call: OnDone comes after Finish
  std::mutex mu_;
  std::deque<v1::LauncherCommand> queue_;
  bool writing_ = false;
  bool closed_ = false;
  bool finish_wanted_ = false;  // Finish once the write in flight is done
  bool finishing_ = false;       // Close was called
  grpc::Status finish_status_;
};

}  // namespace dlaunch
