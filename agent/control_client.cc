#include "agent/control_client.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "proto/agent_batch.h"
#include "proto/grpc_status.h"

namespace dlaunch {
namespace {

constexpr size_t kMaxQueuedMessages = 20000;
// Log lines waiting to be sent, in bytes: past this a flooding worker's lines are dropped
// (they stay in its log file) rather than held in memory.
constexpr size_t kMaxQueuedLogBytes = 16 << 20;
// Messages kept for a move; an agent whose launcher acknowledges nothing keeps only the newest.
constexpr size_t kMaxUnacked = 4096;

// Sent again if the session moves: what the launcher acts on. A heartbeat is overtaken by the
// next one, and log lines stay in the workers' log files.
bool KeptForAMove(const v1::AgentMessage& m) { return !m.has_heartbeat() && !m.has_log(); }

}  // namespace

ControlClient::ControlClient(const std::string& target, const JobCredentials& creds)
    : token_(creds.token) {
  grpc::ChannelArguments args;
  // Fail a connection attempt quickly rather than backing off for a minute.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  channel_ = ControlChannel(target, creds, args);
  stub_ = v1::Control::NewStub(channel_);
}

ControlClient::~ControlClient() { Close(std::chrono::milliseconds(0)); }

absl::StatusOr<v1::PreflightPlan> ControlClient::Preflight(const v1::PreflightRequest& request,
                                                           std::chrono::milliseconds timeout) {
  return Unary<v1::PreflightPlan>(&v1::Control::Stub::Preflight, request, timeout);
}

absl::StatusOr<v1::CollectiveCheckResponse> ControlClient::CollectiveCheck(
    const v1::CollectiveCheckRequest& request, std::chrono::milliseconds timeout) {
  return Unary<v1::CollectiveCheckResponse>(&v1::Control::Stub::CollectiveCheck, request, timeout);
}

absl::StatusOr<v1::JoinResponse> ControlClient::Join(const v1::JoinRequest& request,
                                                     std::chrono::milliseconds timeout) {
  return Unary<v1::JoinResponse>(&v1::Control::Stub::Join, request, timeout);
}

absl::Status ControlClient::OpenSession(OnCommand on_command, OnClosed on_closed) {
  session_context_ = std::make_unique<grpc::ClientContext>();
  session_context_->AddMetadata(kTokenMetadataKey, token_);
  stream_ = stub_->Session(session_context_.get());
  if (!stream_) return absl::UnavailableError("cannot open the session stream");
  reader_ = std::thread(&ControlClient::ReaderLoop, this, std::move(on_command), std::move(on_closed));
  writer_ = std::thread(&ControlClient::WriterLoop, this);
  return absl::OkStatus();
}

void ControlClient::ReaderLoop(OnCommand on_command, OnClosed on_closed) {
  v1::LauncherCommand cmd;
  while (stream_->Read(&cmd)) on_command(cmd);
  {
    std::lock_guard<std::mutex> lock(mu_);
    reader_done_ = true;
  }
  cv_.notify_all();
  grpc::Status s = stream_->Finish();
  on_closed(s.ok() ? "launcher closed the session"
                   : absl::StrCat("session lost: ", s.error_message()),
            s.error_code() == grpc::StatusCode::UNAVAILABLE);
}

void ControlClient::WriterLoop() {
  for (;;) {
    std::vector<v1::AgentMessage> batch;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return !queue_.empty() || closing_ || reader_done_; });
      if (queue_.empty() || reader_done_) break;
      // Everything queued while the last write was in flight goes up in one write.
      batch = TakeBatch(queue_, [this](const v1::AgentMessage& m, size_t bytes) {
        if (m.has_log()) queued_log_bytes_ -= std::min(queued_log_bytes_, bytes);
      });
      for (const v1::AgentMessage& m : batch) {
        if (!KeptForAMove(m)) continue;
        if (unacked_.size() >= kMaxUnacked) unacked_.pop_front();
        unacked_.push_back(m);
      }
    }
    if (!stream_->Write(Batched(std::move(batch)))) break;
  }
  stream_->WritesDone();
}

void ControlClient::Send(v1::AgentMessage message) {
  if (Queue(std::move(message))) Wake();
}

bool ControlClient::Queue(v1::AgentMessage message) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!stream_ || closing_) return false;
  // Numbered first: the writer subtracts each log message's size as it is written, seq included.
  message.set_seq(last_seq_ + 1);
  if (message.has_log()) {
    const size_t bytes = message.ByteSizeLong();
    if (queue_.size() >= kMaxQueuedMessages || queued_log_bytes_ + bytes > kMaxQueuedLogBytes) {
      return false;
    }
    queued_log_bytes_ += bytes;
  }
  ++last_seq_;
  queue_.push_back(std::move(message));
  return true;
}

void ControlClient::Wake() { cv_.notify_all(); }

void ControlClient::Ack(uint64_t seq) {
  std::lock_guard<std::mutex> lock(mu_);
  while (!unacked_.empty() && unacked_.front().seq() <= seq) unacked_.pop_front();
}

ControlClient::Unsent ControlClient::TakeUnsent() {
  std::lock_guard<std::mutex> lock(mu_);
  Unsent out;
  out.last_seq = last_seq_;
  for (v1::AgentMessage& m : unacked_) out.messages.push_back(std::move(m));
  for (v1::AgentMessage& m : queue_) {
    if (KeptForAMove(m)) out.messages.push_back(std::move(m));
  }
  unacked_.clear();
  queue_.clear();
  queued_log_bytes_ = 0;
  return out;
}

void ControlClient::Resume(Unsent unsent) {
  std::lock_guard<std::mutex> lock(mu_);
  last_seq_ = std::max(last_seq_, unsent.last_seq);
  queue_.insert(queue_.begin(), std::make_move_iterator(unsent.messages.begin()),
                std::make_move_iterator(unsent.messages.end()));
}

void ControlClient::Close(std::chrono::milliseconds timeout) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closing_ || !stream_) return;
    closing_ = true;
  }
  cv_.notify_all();
  if (writer_.joinable()) writer_.join();
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, timeout, [&] { return reader_done_; })) session_context_->TryCancel();
  }
  if (reader_.joinable()) reader_.join();
}

}  // namespace dlaunch
