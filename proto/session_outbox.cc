#include "proto/session_outbox.h"

#include <utility>

namespace dlaunch {

void SessionOutbox::Send(v1::LauncherCommand command) {
  const v1::LauncherCommand* start = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return;
    if (writing_ && queue_.size() >= 2 && IsPing(queue_.back())) queue_.pop_back();
    queue_.push_back(std::move(command));
    if (writing_) return;
    writing_ = true;
    start = &queue_.front();  // a deque keeps its elements in place on push_back
  }
  reactor_->StartWrite(start);  // OnWriteDone runs on one of gRPC's threads
}

void SessionOutbox::OnWriteDone(bool ok) {
  const v1::LauncherCommand* next = nullptr;
  bool finish = false;
  grpc::Status status;
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.pop_front();
    if (!ok) {  // the stream is broken; the read side will see it and close
      closed_ = true;
      queue_.clear();
    }
    if (!closed_ && !queue_.empty()) {
      next = &queue_.front();
    } else {
      writing_ = false;
      finish = finish_wanted_;
      finish_wanted_ = false;
      status = finish_status_;
    }
  }
  if (next != nullptr) reactor_->StartWrite(next);
  if (finish) reactor_->Finish(status);  // OnDone follows
}

void SessionOutbox::Close(grpc::Status status) {
  bool finish = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (finishing_) return;  // Finish is called once
    finishing_ = true;
    closed_ = true;
    while (queue_.size() > (writing_ ? 1u : 0u)) queue_.pop_back();
    finish = !writing_;
    finish_wanted_ = writing_;
    finish_status_ = std::move(status);
  }
  if (finish) reactor_->Finish(finish_status_);
}

}  // namespace dlaunch
