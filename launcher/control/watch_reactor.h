// The server side of one Watch call on gRPC's callback API: snapshots go out one write at a
// time, and a snapshot that arrives while one is being written replaces any still waiting, so
// a slow watcher sees fewer snapshots and never holds up the launcher's loop. The stream ends
// OK after the snapshot with `ended` set.
#pragma once

#include <memory>

#include <grpcpp/grpcpp.h>

#include "dlaunch/control.grpc.pb.h"
#include "launcher/control/control_handler.h"

namespace dlaunch {

class WatchOutbox;

class WatchReactor final : public grpc::ServerWriteReactor<v1::JobSnapshot> {
 public:
  WatchReactor();
  // What the loop sends to; it stays valid (and closed) after the call is done.
  std::shared_ptr<SnapshotSink> sink() const;
  // Ends the call with `status` before anything was written.
  void Refuse(const grpc::Status& status);

  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

 private:
  std::shared_ptr<WatchOutbox> outbox_;
};

// A Watch call answered at once with `status` (no token, no watch handler).
grpc::ServerWriteReactor<v1::JobSnapshot>* RefusedWatch(const grpc::Status& status);

}  // namespace dlaunch
