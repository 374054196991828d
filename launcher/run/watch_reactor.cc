#include "launcher/run/watch_reactor.h"

#include <mutex>
#include <optional>

#include "common/tsan_handoff.h"

namespace dlaunch {

class WatchOutbox final : public SnapshotSink {
 public:
  explicit WatchOutbox(WatchReactor* reactor) : reactor_(reactor) {}

  void Send(const v1::JobSnapshot& snapshot) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (closed_ || last_queued_) return;
      last_queued_ = snapshot.ended();
      if (writing_) {
        pending_ = snapshot;
        return;
      }
      writing_ = true;
      current_ = snapshot;
    }
    // The reactor stays alive while a write is in flight: it is finished only once none is.
    StartWriteHandedOff(reactor_, &current_);  // OnWriteDone runs on one of gRPC's threads
  }

  bool closed() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return closed_;
  }

  void OnWriteDone(bool ok) {
    std::optional<grpc::Status> finish;
    bool write = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      writing_ = false;
      if (!ok) closed_ = true;
      if (closed_) {
        finish = grpc::Status::CANCELLED;
      } else if (pending_) {
        current_ = *std::move(pending_);
        pending_.reset();
        writing_ = write = true;
      } else if (current_.ended()) {
        closed_ = true;
        finish = grpc::Status::OK;
      }
      if (finish && finished_) finish.reset();
      if (finish) finished_ = true;
    }
    if (write) StartWriteHandedOff(reactor_, &current_);
    if (finish) FinishHandedOff(reactor_, *finish);  // OnDone follows
  }

  // The watcher went away, or the call is refused: finish now unless a write is in flight (its
  // OnWriteDone finishes then).
  void Close(const grpc::Status& status) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closed_ = true;
      if (writing_ || finished_) return;
      finished_ = true;
    }
    FinishHandedOff(reactor_, status);
  }

 private:

  WatchReactor* const reactor_;  // alive until OnDone, which follows Finish
  mutable std::mutex mu_;
  v1::JobSnapshot current_;      // the snapshot being written
  std::optional<v1::JobSnapshot> pending_;
  bool writing_ = false;
  bool closed_ = false;
  bool finished_ = false;
  bool last_queued_ = false;     // the ended snapshot is queued or written
};

WatchReactor::WatchReactor() : outbox_(std::make_shared<WatchOutbox>(this)) {
  HandOff(OpToken(this, ReactorOp::kBind));  // gRPC binds it and may cancel on another thread
}

std::shared_ptr<SnapshotSink> WatchReactor::sink() const { return outbox_; }

void WatchReactor::Refuse(const grpc::Status& status) { outbox_->Close(status); }

void WatchReactor::OnWriteDone(bool ok) {
  TakeOver(OpToken(this, ReactorOp::kWrite));  // the outbox's HandOff before StartWrite
  outbox_->OnWriteDone(ok);
}

void WatchReactor::OnCancel() {
  TakeOver(OpToken(this, ReactorOp::kBind));  // the constructor ran on another thread
  outbox_->Close(grpc::Status::CANCELLED);
}

void WatchReactor::OnDone() {
  TakeOverAll(this);  // gRPC calls OnDone after Finish and every reaction
  delete this;
}

namespace {

class RefusedWatchReactor final : public grpc::ServerWriteReactor<v1::JobSnapshot> {
 public:
  explicit RefusedWatchReactor(const grpc::Status& status) {
    FinishHandedOff(this, status);  // OnDone follows, on another thread
  }
  void OnDone() override {
    TakeOverAll(this);  // gRPC calls OnDone after Finish and every reaction
    delete this;
  }
};

}  // namespace

grpc::ServerWriteReactor<v1::JobSnapshot>* RefusedWatch(const grpc::Status& status) {
  return new RefusedWatchReactor(status);
}

}  // namespace dlaunch
