#include "launcher/run/control_service.h"

#include <deque>
#include <memory>
#include <utility>

#include "common/host_identity.h"
#include "launcher/run/watch_reactor.h"
#include "proto/grpc_status.h"

namespace dlaunch {
namespace {

using SessionReactorBase = grpc::ServerBidiReactor<v1::AgentMessage, v1::LauncherCommand>;

bool ConstantTimeEquals(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

class JoinReactor final : public grpc::ServerUnaryReactor {
 public:
  JoinReactor(ControlService* service, std::string agent_id)
      : service_(service), agent_id_(std::move(agent_id)) {}
  void OnCancel() override {
    service_->Post([h = service_->handler(), id = agent_id_] { h->HandleJoinCancelled(id); });
  }
  void OnDone() override { delete this; }

 private:
  ControlService* service_;
  std::string agent_id_;
};

bool IsPing(const v1::LauncherCommand& c) { return !c.has_stop() && !c.has_start(); }

// The launcher-to-agent queue of one session: one write in flight, the next started from
// OnWriteDone on gRPC's threads. Finishing waits for the write in flight.
class SessionOutbox final : public AgentSession {
 public:
  explicit SessionOutbox(SessionReactorBase* reactor) : reactor_(reactor) {}

  void Send(v1::LauncherCommand command) override {
    const v1::LauncherCommand* start = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (closed_) return;
      // A queued ping (not the write in flight) says only the newest heard_ms, which every later
      // command carries too: it is replaced, so an agent that reads slowly gets its next stop
      // or start after one write, not after a ping for every second it fell behind.
      if (writing_ && queue_.size() >= 2 && IsPing(queue_.back())) queue_.pop_back();
      queue_.push_back(std::move(command));
      if (writing_) return;
      writing_ = true;
      start = &queue_.front();  // a deque keeps its elements in place on push_back
    }
    reactor_->StartWrite(start);  // OnWriteDone runs on one of gRPC's threads
  }

  void OnWriteDone(bool ok) {
    const v1::LauncherCommand* next = nullptr;
    bool finish = false;
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
      }
    }
    if (next != nullptr) reactor_->StartWrite(next);
    if (finish) reactor_->Finish(grpc::Status::OK);  // OnDone follows
  }

  // The agent's side ended: drop what is queued and finish once no write is in flight.
  void Close() {
    bool finish = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      closed_ = true;
      while (queue_.size() > (writing_ ? 1u : 0u)) queue_.pop_back();
      finish = !writing_;
      finish_wanted_ = writing_;
    }
    if (finish) reactor_->Finish(grpc::Status::OK);
  }

 private:
  SessionReactorBase* const reactor_;  // outlives every call: OnDone comes after Finish
  std::mutex mu_;
  std::deque<v1::LauncherCommand> queue_;
  bool writing_ = false;
  bool closed_ = false;
  bool finish_wanted_ = false;
};

class SessionReactor final : public SessionReactorBase {
 public:
  SessionReactor(ControlService* service, int id)
      : service_(service), id_(id), outbox_(std::make_shared<SessionOutbox>(this)) {
    StartRead(&in_);  // made on one of gRPC's threads, read on another
  }

  void OnReadDone(bool ok) override {
    ControlHandler* h = service_->handler();
    if (!ok) {
      if (opened_) service_->Post([h, id = id_, node = node_] { h->HandleSessionEnded(id, node); });
      outbox_->Close();
      return;
    }
    if (!opened_) {
      opened_ = true;
      node_ = in_.node_id();
      service_->Post([h, id = id_, node = node_, out = outbox_] { h->HandleSessionOpened(id, node, out); });
    }
    // Moved, not copied: a heartbeat carries a report per rank. in_ is empty again for the read.
    // A batch is handled message by message, in order, as if each had come alone.
    service_->Post([h, id = id_, node = node_, msg = std::move(in_)] {
      if (!msg.has_batch()) return h->HandleAgentMessage(id, node, msg);
      for (const v1::AgentMessage& m : msg.batch().messages()) {
        if (!m.has_batch()) h->HandleAgentMessage(id, node, m);
      }
    });
    in_.Clear();
    StartRead(&in_);  // the next OnReadDone may run on another thread
  }
  void OnWriteDone(bool ok) override { outbox_->OnWriteDone(ok); }
  void OnDone() override { delete this; }

 private:
  ControlService* service_;
  const int id_;
  std::shared_ptr<SessionOutbox> outbox_;
  v1::AgentMessage in_;
  bool opened_ = false;
  int node_ = -1;
};

class RefusedSession final : public SessionReactorBase {
 public:
  RefusedSession() {  // OnDone follows
    Finish(grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "missing or wrong job token"));
  }
  void OnDone() override { delete this; }
};

}  // namespace

ControlService::ControlService(std::string token, boost::asio::io_context& io,
                               ControlHandler* handler)
    : token_(std::move(token)), io_(io), handler_(handler) {}

bool ControlService::Post(std::function<void()> task) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!posting_) return false;
  pending_.push_back(std::move(task));
  // One task on the loop drains everything posted until it runs: at 10,000 agents a post (and
  // a wake-up of the loop) per message was a quarter of the loop's time.
  if (!drain_posted_) {
    drain_posted_ = true;
    boost::asio::post(io_, [this] { Drain(); });
  }
  return true;
}

void ControlService::Drain() {
  std::vector<std::function<void()>> batch;
  {
    std::lock_guard<std::mutex> lock(mu_);
    batch.swap(pending_);
    drain_posted_ = false;
  }
  for (auto& task : batch) task();
}

void ControlService::StopPosting() {
  std::lock_guard<std::mutex> lock(mu_);
  posting_ = false;
}

bool ControlService::Authorized(grpc::CallbackServerContext* ctx, const char* method) {
  const auto& md = ctx->client_metadata();
  auto it = md.find(kTokenMetadataKey);
  if (it != md.end() &&
      ConstantTimeEquals(std::string(it->second.data(), it->second.size()), token_)) {
    return true;
  }
  Post([h = handler_, peer = ctx->peer(), m = std::string(method)] { h->HandleRefused(peer, m); });
  return false;
}

grpc::ServerUnaryReactor* ControlService::Preflight(grpc::CallbackServerContext* ctx,
                                                    const v1::PreflightRequest*,
                                                    v1::PreflightPlan* plan) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  if (!Authorized(ctx, "Preflight")) {
    reactor->Finish(grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "missing or wrong job token"));
    return reactor;
  }
  *plan = preflight_;
  plan->set_launcher_time_ms(std::chrono::duration_cast<std::chrono::milliseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count());
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* ControlService::Join(grpc::CallbackServerContext* ctx,
                                               const v1::JoinRequest* req,
                                               v1::JoinResponse* resp) {
  if (!Authorized(ctx, "Join")) {
    grpc::ServerUnaryReactor* refused = ctx->DefaultReactor();
    refused->Finish(grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "missing or wrong job token"));
    return refused;
  }
  Participant p;
  p.agent_id = req->agent_id();
  p.host = ShortHostName(req->host());
  p.addr = req->addr();
  p.slots = req->slots();
  p.worker_port = req->worker_port();
  p.checks.assign(req->checks().begin(), req->checks().end());
  auto* reactor = new JoinReactor(this, p.agent_id);
  JoinReply reply = [reactor, resp](absl::StatusOr<v1::JoinResponse> result) {
    if (result.ok()) *resp = *std::move(result);
    // On whichever thread replies (the loop, or the handler's); OnDone follows on gRPC's.
    reactor->Finish(result.ok() ? grpc::Status::OK : ToGrpcStatus(result.status()));
  };
  if (!Post([h = handler_, p, reply] { h->HandleJoin(p, reply); })) {
    reply(absl::CancelledError("launcher is stopping"));
  }
  return reactor;
}

grpc::ServerBidiReactor<v1::AgentMessage, v1::LauncherCommand>* ControlService::Session(
    grpc::CallbackServerContext* ctx) {
  if (!Authorized(ctx, "Session")) return new RefusedSession();
  return new SessionReactor(this, next_session_id_++);
}

grpc::ServerWriteReactor<v1::JobSnapshot>* ControlService::Watch(grpc::CallbackServerContext* ctx,
                                                                 const v1::WatchRequest*) {
  if (!Authorized(ctx, "Watch")) {
    return RefusedWatch(
        grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "missing or wrong job token"));
  }
  if (watch_handler_ == nullptr) {
    return RefusedWatch(grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "no live view here"));
  }
  auto* reactor = new WatchReactor();
  if (!Post([h = watch_handler_, sink = reactor->sink()] { h->HandleWatch(sink); })) {
    reactor->Refuse(grpc::Status(grpc::StatusCode::UNAVAILABLE, "the job has ended"));
  }
  return reactor;
}

}  // namespace dlaunch
