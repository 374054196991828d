#include "launcher/control/watch_reactor.h"

#include <mutex>
#include <optional>

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
    reactor_->StartWrite(&current_);  // OnWriteDone runs on one of gRPC's threads
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
    if (write) reactor_->StartWrite(&current_);
    if (finish) reactor_->Finish(*finish);  // OnDone follows
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
    reactor_->Finish(status);
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

WatchReactor::WatchReactor() : outbox_(std::make_shared<WatchOutbox>(this)) {}

std::shared_ptr<SnapshotSink> WatchReactor::sink() const { return outbox_; }

void WatchReactor::Refuse(const grpc::Status& status) { outbox_->Close(status); }

void WatchReactor::OnWriteDone(bool ok) { outbox_->OnWriteDone(ok); }

void WatchReactor::OnCancel() { outbox_->Close(grpc::Status::CANCELLED); }

void WatchReactor::OnDone() { delete this; }

namespace {

class RefusedWatchReactor final : public grpc::ServerWriteReactor<v1::JobSnapshot> {
 public:
  explicit RefusedWatchReactor(const grpc::Status& status) {
    Finish(status);  // OnDone follows, on another thread
  }
  void OnDone() override { delete this; }
};

}  // namespace

grpc::ServerWriteReactor<v1::JobSnapshot>* RefusedWatch(const grpc::Status& status) {
  return new RefusedWatchReactor(status);
}

}  // namespace dlaunch
