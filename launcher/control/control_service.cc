#include "launcher/control/control_service.h"

#include <deque>
#include <memory>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/host_identity.h"
#include "launcher/control/relay_reactor.h"
#include "launcher/control/watch_reactor.h"
#include "proto/grpc_status.h"
#include "proto/session_outbox.h"

namespace dlaunch {
namespace {

class JoinReactor final : public grpc::ServerUnaryReactor {
 public:
  JoinReactor(ControlService* service, std::string agent_id, uint64_t call)
      : service_(service), agent_id_(std::move(agent_id)), call_(call) {}
  void OnCancel() override {
    service_->Post([h = service_->handler(), id = agent_id_, call = call_] {
      h->HandleJoinCancelled(id, call);
    });
  }
  void OnDone() override { delete this; }

 private:
  ControlService* service_;
  std::string agent_id_;
  uint64_t call_;
};

// The launcher's handle on one session's outbox.
class OutboxSession final : public AgentSession {
 public:
  explicit OutboxSession(std::shared_ptr<SessionOutbox> outbox) : outbox_(std::move(outbox)) {}
  void Send(v1::LauncherCommand command) override { outbox_->Send(std::move(command)); }

 private:
  std::shared_ptr<SessionOutbox> outbox_;
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
      service_->Post([h, id = id_, node = node_, out = std::make_shared<OutboxSession>(outbox_)] {
        h->HandleSessionOpened(id, node, out);
      });
    }
    // Moved, not copied: a heartbeat carries a report per rank. in_ is empty again for the read.
    // A batch is handled message by message, in order, as if each had come alone.
    service_->Post([h, id = id_, node = node_, msg = std::move(in_)] {
      HandleAgentMessageOrBatch(h, id, node, msg);
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

}  // namespace

void HandleAgentMessageOrBatch(ControlHandler* h, int session_id, int node,
                               const v1::AgentMessage& msg) {
  if (!msg.has_batch()) return h->HandleAgentMessage(session_id, node, msg);
  for (const v1::AgentMessage& m : msg.batch().messages()) {
    if (!m.has_batch()) h->HandleAgentMessage(session_id, node, m);
  }
}

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
  {
    std::lock_guard<std::mutex> lock(mu_);
    posting_ = false;
  }
  // On the loop's thread (it has stopped): the calls it holds are answered before shutdown.
  if (collective_) collective_->ShutdownCollectiveCheck();
}

bool ControlService::Authorized(grpc::CallbackServerContext* ctx, const char* method) {
  if (CarriesToken(ctx->client_metadata(), token_)) return true;
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

grpc::ServerUnaryReactor* ControlService::CollectiveCheck(grpc::CallbackServerContext* ctx,
                                                          const v1::CollectiveCheckRequest* req,
                                                          v1::CollectiveCheckResponse* resp) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  if (!Authorized(ctx, "CollectiveCheck")) {
    reactor->Finish(grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "missing or wrong job token"));
    return reactor;
  }
  auto reply = [reactor, resp](v1::CollectiveCheckResponse answer) {
    *resp = std::move(answer);
    reactor->Finish(grpc::Status::OK);
  };
  if (!collective_) {
    v1::CollectiveCheckResponse skipped;
    skipped.set_skipped("the launcher does not run the collective check");
    reply(std::move(skipped));
    return reactor;
  }
  if (!Post([c = collective_, q = *req, reply] { c->HandleCollectiveCheck(q, reply); })) {
    v1::CollectiveCheckResponse stopping;
    stopping.set_skipped("the launcher is stopping");
    reply(std::move(stopping));
  }
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
  p.join_call = ++join_calls_;
  auto* reactor = new JoinReactor(this, p.agent_id, p.join_call);
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
  if (!Authorized(ctx, "Session")) {
    return new RefusedSession(
        grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "missing or wrong job token"));
  }
  return new SessionReactor(this, next_session_id_++);
}

grpc::ServerBidiReactor<v1::RelayUp, v1::RelayDown>* ControlService::Relay(
    grpc::CallbackServerContext* ctx) {
  if (!Authorized(ctx, "Relay")) {
    return RefusedRelay(grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "missing or wrong job token"));
  }
  const auto& metadata = ctx->client_metadata();
  auto name = metadata.find(kRelayNameMetadataKey);
  return NewRelayReactor(this, name != metadata.end()
                                   ? absl::StrCat(std::string(name->second.data(), name->second.size()),
                                                  " (", ctx->peer(), ")")
                                   : absl::StrCat("the relay at ", ctx->peer()));
}

grpc::ServerUnaryReactor* ControlService::IssueCertificate(grpc::CallbackServerContext* ctx,
                                                           const v1::CertificateRequest* req,
                                                           v1::CertificateIssued* resp) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  if (!Authorized(ctx, "IssueCertificate")) {
    reactor->Finish(grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "missing or wrong job token"));
    return reactor;
  }
  if (identity_ == nullptr) {
    reactor->Finish(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                                 "the control channel of this job is plain TCP (rendezvous.tls: off)"));
    return reactor;
  }
  // The launcher starts its relays on its own host, one certificate each: a token holder
  // elsewhere, or one more caller, gets none (a certificate lets its holder serve agents).
  const std::string peer = ctx->peer();
  const bool loopback = absl::StartsWith(peer, "ipv4:127.") || absl::StartsWith(peer, "ipv6:[::1]") ||
                        absl::StartsWith(peer, "ipv6:[::ffff:127.");
  if (!loopback || certificates_left_.fetch_sub(1) <= 0) {
    Post([h = handler_, peer, m = std::string("IssueCertificate")] { h->HandleRefused(peer, m); });
    reactor->Finish(grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                                 loopback ? "every relay of this job has its certificate"
                                          : "certificates are issued to relays on the launcher's host only"));
    return reactor;
  }
  absl::StatusOr<std::string> cert = IssueRelayCertificate(*identity_, req->public_key_pem());
  if (cert.ok()) resp->set_certificate_pem(*std::move(cert));
  reactor->Finish(cert.ok() ? grpc::Status::OK : ToGrpcStatus(cert.status()));
  return reactor;
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
