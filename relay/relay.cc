#include "relay/relay.h"

#include <chrono>
#include <condition_variable>
#include <functional>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "proto/control_credentials.h"
#include "proto/grpc_status.h"
#include "proto/session_outbox.h"

namespace dlaunch {

// The relay's one stream to the launcher: entries queued by any thread go up in RelayUp writes,
// one in flight. A write starts once the oldest queued entry has waited kRelayUpLinger (or
// kRelayUpMaxBytes are queued), so it carries what arrived meanwhile: agents' heartbeats come
// spread over the second, and without the wait most writes would carry one or two. RelayDown
// commands are handed to the agents' sessions as they are read, without a wait.
class RelayUpstream final : public grpc::ClientBidiReactor<v1::RelayUp, v1::RelayDown> {
 public:
  explicit RelayUpstream(Relay* relay) : relay_(relay) {
    ctx_.AddMetadata(kTokenMetadataKey, relay->token());
    if (!relay->name().empty()) ctx_.AddMetadata(kRelayNameMetadataKey, relay->name());
    flusher_ = std::thread([this] { Flush(); });
  }
  ~RelayUpstream() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    flusher_.join();
  }

  // Writes start from the flusher and from any thread that queues, so a hold keeps OnDone
  // back until the read side has ended and no write can start any more. Every StartWrite is
  // issued under mu_ after checking closing_ (reactions never run inline, so this cannot
  // deadlock).
  void Open(v1::Control::Stub* stub) {
    stub->async()->Relay(&ctx_, this);
    AddHold();
    StartRead(&down_);
    StartCall();
  }

  void Queue(v1::RelayEntry entry) {
    std::lock_guard<std::mutex> lock(mu_);
    if (closing_) return;
    const size_t bytes = entry.ByteSizeLong();
    if (queued_.empty()) oldest_ = std::chrono::steady_clock::now();
    queued_.push_back({std::move(entry), bytes});
    queued_bytes_ += bytes;
    if (writing_ || queued_bytes_ < kRelayUpMaxBytes) {
      if (queued_.size() == 1) cv_.notify_one();
      return;
    }
    WriteQueued();
  }

  void Cancel() { ctx_.TryCancel(); }

  void OnWriteDone(bool ok) override {
    std::lock_guard<std::mutex> lock(mu_);
    writing_ = false;
    if (!ok) {  // the stream is ending: the read side sees it too
      closing_ = true;
      return;
    }
    if (queued_bytes_ >= kRelayUpMaxBytes) return WriteQueued();
    if (!queued_.empty()) cv_.notify_one();  // the flusher writes it once it has waited
  }

  void OnReadDone(bool ok) override {
    if (!ok) {  // the stream has ended: no write starts from now on, and OnDone may come
      {
        std::lock_guard<std::mutex> lock(mu_);
        closing_ = true;
      }
      cv_.notify_all();
      RemoveHold();
      return;
    }
    relay_->writes_down.fetch_add(1, std::memory_order_relaxed);
    for (v1::RelayCommand& c : *down_.mutable_commands()) {
      relay_->Deliver(c.child(), std::move(*c.mutable_command()));
    }
    down_.Clear();
    StartRead(&down_);
  }

  void OnDone(const grpc::Status& status) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queued_.clear();
    }
    relay_->UpstreamEnded(status);
  }

  int64_t entries_up() const { return entries_up_.load(); }
  int64_t writes_up() const { return writes_up_.load(); }

 private:
  struct Queued {
    v1::RelayEntry entry;
    size_t bytes;
  };

  // Starts a write of what is queued once the oldest entry has waited kRelayUpLinger and no write
  // is in flight; until the stream is done.
  void Flush() {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      cv_.wait(lock, [this] { return stop_ || closing_ || (!writing_ && !queued_.empty()); });
      if (stop_ || closing_) return;
      const auto due = oldest_ + kRelayUpLinger;
      if (std::chrono::steady_clock::now() < due) {
        cv_.wait_until(lock, due, [this] { return stop_ || closing_; });
        continue;  // look again: a write may have started, or the queue been taken
      }
      WriteQueued();
    }
  }

  // Starts a write of what is queued (mu_ held, no write in flight, the stream not closing).
  void WriteQueued() {
    writing_ = true;
    TakeQueued();
    StartWrite(&up_);
  }

  // Moves what is queued into up_, at most kRelayUpMaxBytes unless one entry is larger (mu_ held).
  void TakeQueued() {
    up_.Clear();
    size_t bytes = 0, n = 0;
    while (n < queued_.size() && (n == 0 || bytes + queued_[n].bytes <= kRelayUpMaxBytes)) {
      bytes += queued_[n].bytes;
      *up_.add_entries() = std::move(queued_[n].entry);
      ++n;
    }
    queued_.erase(queued_.begin(), queued_.begin() + static_cast<std::ptrdiff_t>(n));
    queued_bytes_ -= bytes;
    if (!queued_.empty()) oldest_ = std::chrono::steady_clock::now();  // waited long enough
    entries_up_.fetch_add(static_cast<int64_t>(n), std::memory_order_relaxed);
    writes_up_.fetch_add(1, std::memory_order_relaxed);
  }

  Relay* const relay_;
  grpc::ClientContext ctx_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::thread flusher_;
  std::vector<Queued> queued_;
  size_t queued_bytes_ = 0;
  std::chrono::steady_clock::time_point oldest_;  // when the oldest queued entry came
  v1::RelayUp up_;      // the write in flight
  v1::RelayDown down_;  // the read in flight
  bool writing_ = false;
  bool closing_ = false;  // the stream is ending: no write starts
  bool stop_ = false;     // the flusher ends
  std::atomic<int64_t> entries_up_{0}, writes_up_{0};
};

namespace {

// One agent's Session at the relay: what it sends goes up as entries of its child number; what
// the launcher sends it comes through its outbox.
class ChildReactor final : public SessionReactorBase {
 public:
  ChildReactor(Relay* relay, int child, std::shared_ptr<SessionOutbox>* outbox)
      : relay_(relay), child_(child), outbox_(std::make_shared<SessionOutbox>(this)) {
    *outbox = outbox_;
    StartRead(&in_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      relay_->ChildEnded(child_);
      outbox_->Close();
      return;
    }
    v1::RelayEntry entry;
    entry.set_child(child_);
    *entry.mutable_message() = std::move(in_);
    relay_->upstream()->Queue(std::move(entry));
    in_.Clear();
    StartRead(&in_);
  }
  void OnWriteDone(bool ok) override { outbox_->OnWriteDone(ok); }
  void OnDone() override {
    relay_->Forget(child_);
    delete this;
  }

 private:
  Relay* const relay_;
  const int child_;
  std::shared_ptr<SessionOutbox> outbox_;
  v1::AgentMessage in_;
};

// A unary call passed on to the launcher unchanged; the agent's cancel cancels it there too.
class ForwardedCall final : public grpc::ServerUnaryReactor {
 public:
  ForwardedCall(grpc::CallbackServerContext* server_ctx, const std::string& token) {
    ctx_.AddMetadata(kTokenMetadataKey, token);
    ctx_.set_deadline(server_ctx->deadline());
  }
  grpc::ClientContext* client() { return &ctx_; }
  void OnCancel() override { ctx_.TryCancel(); }
  void OnDone() override { delete this; }  // after Finish, which the launcher's answer calls

 private:
  grpc::ClientContext ctx_;
};

const grpc::Status kRefused(grpc::StatusCode::UNAUTHENTICATED, "missing or wrong job token");

// A unary call: refused, or passed on by `upstream(client context, request, response, done)`.
template <typename Request, typename Response, typename Upstream>
grpc::ServerUnaryReactor* ForwardUnary(grpc::CallbackServerContext* ctx, bool authorized,
                                       const std::string& token, const Request* req,
                                       Response* resp, Upstream upstream) {
  if (!authorized) {
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    reactor->Finish(kRefused);
    return reactor;
  }
  auto* call = new ForwardedCall(ctx, token);
  upstream(call->client(), req, resp, [call](grpc::Status s) { call->Finish(std::move(s)); });
  return call;
}

}  // namespace

Relay::Relay(RelayOptions options) : options_(std::move(options)) {}

Relay::~Relay() {
  if (upstream_) {  // opened: its OnDone must have run before it goes
    Stop();
    Wait();
  }
  if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
}

absl::StatusOr<std::unique_ptr<Relay>> Relay::Start(RelayOptions options) {
  std::unique_ptr<Relay> relay(new Relay(std::move(options)));
  const JobCredentials& creds = relay->options_.credentials;
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);  // a RelayDown carries commands for many agents
  relay->channel_ = ControlChannel(relay->options_.upstream, creds, args);
  relay->stub_ = v1::Control::NewStub(relay->channel_);

  // TLS: a key of the relay's own, and a certificate for it signed with the job's key, so the
  // agents' pin to the job's certificate holds. Agents get the job's certificate after ours.
  std::optional<ControlIdentity> identity;
  if (!creds.fingerprint.empty()) {
    absl::StatusOr<RelayKey> key = MakeRelayKey();
    if (!key.ok()) return key.status();
    grpc::ClientContext ctx;
    ctx.AddMetadata(kTokenMetadataKey, creds.token);
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    ctx.set_wait_for_ready(true);  // the launcher may still be starting its endpoint
    v1::CertificateRequest req;
    req.set_public_key_pem(key->public_key_pem);
    v1::CertificateIssued issued;
    grpc::Status st = relay->stub_->IssueCertificate(&ctx, req, &issued);
    if (!st.ok()) {
      return absl::UnavailableError(absl::StrCat("the launcher at ", relay->options_.upstream,
                                                 " did not issue a certificate: ",
                                                 st.error_message()));
    }
    identity = ControlIdentity{issued.certificate_pem() + creds.cert_pem, key->private_key_pem, ""};
  }

  relay->upstream_ = std::make_unique<RelayUpstream>(relay.get());
  relay->upstream_->Open(relay->stub_.get());

  grpc::ServerBuilder builder;
  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS, 30000);
  builder.AddListeningPort(relay->options_.listen,
                           ControlServerCredentials(identity ? &*identity : nullptr), &relay->port_);
  builder.RegisterService(relay.get());
  relay->server_ = CallbackServer::BuildAndStart(builder);
  if (!relay->server_ || relay->port_ == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", relay->options_.listen));
  }
  return relay;
}

grpc::Status Relay::Wait() {
  std::unique_lock<std::mutex> lock(mu_);
  ended_cv_.wait(lock, [this] { return ended_; });
  return end_status_;
}

void Relay::Stop() {
  if (upstream_) upstream_->Cancel();
}

RelayCounts Relay::counts() const {
  RelayCounts c;
  {
    std::lock_guard<std::mutex> lock(mu_);
    c.sessions = sessions_;
  }
  if (upstream_) {
    c.entries_up = upstream_->entries_up();
    c.writes_up = upstream_->writes_up();
  }
  c.commands_down = commands_down.load();
  c.writes_down = writes_down.load();
  c.refused = refused_.load();
  c.undeliverable = undeliverable.load();
  return c;
}

bool Relay::Authorized(grpc::CallbackServerContext* ctx, const char* method) {
  if (CarriesToken(ctx->client_metadata(), options_.credentials.token)) return true;
  refused_.fetch_add(1, std::memory_order_relaxed);
  // The launcher records the refusal (call_refused), as for a call made to it.
  v1::RelayEntry entry;
  entry.set_child(-1);
  entry.mutable_refused()->set_peer(ctx->peer());
  entry.mutable_refused()->set_method(method);
  upstream_->Queue(std::move(entry));
  return false;
}

grpc::ServerUnaryReactor* Relay::Preflight(grpc::CallbackServerContext* ctx,
                                           const v1::PreflightRequest* req,
                                           v1::PreflightPlan* plan) {
  return ForwardUnary(ctx, Authorized(ctx, "Preflight"), token(), req, plan,
                      [this](grpc::ClientContext* c, const v1::PreflightRequest* q,
                             v1::PreflightPlan* p, std::function<void(grpc::Status)> done) {
                        stub_->async()->Preflight(c, q, p, std::move(done));
                      });
}

grpc::ServerUnaryReactor* Relay::CollectiveCheck(grpc::CallbackServerContext* ctx,
                                                 const v1::CollectiveCheckRequest* req,
                                                 v1::CollectiveCheckResponse* resp) {
  return ForwardUnary(ctx, Authorized(ctx, "CollectiveCheck"), token(), req, resp,
                      [this](grpc::ClientContext* c, const v1::CollectiveCheckRequest* q,
                             v1::CollectiveCheckResponse* p, std::function<void(grpc::Status)> done) {
                        stub_->async()->CollectiveCheck(c, q, p, std::move(done));
                      });
}

grpc::ServerUnaryReactor* Relay::Join(grpc::CallbackServerContext* ctx, const v1::JoinRequest* req,
                                      v1::JoinResponse* resp) {
  return ForwardUnary(ctx, Authorized(ctx, "Join"), token(), req, resp,
                      [this](grpc::ClientContext* c, const v1::JoinRequest* q, v1::JoinResponse* p,
                             std::function<void(grpc::Status)> done) {
                        stub_->async()->Join(c, q, p, std::move(done));
                      });
}

grpc::ServerBidiReactor<v1::AgentMessage, v1::LauncherCommand>* Relay::Session(
    grpc::CallbackServerContext* ctx) {
  if (!Authorized(ctx, "Session")) return new RefusedSession(kRefused);
  std::lock_guard<std::mutex> lock(mu_);
  if (upstream_done_) {
    return new RefusedSession(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                           "the relay's stream to the launcher has ended"));
  }
  const int child = next_child_++;
  ++sessions_;
  std::shared_ptr<SessionOutbox> outbox;
  auto* reactor = new ChildReactor(this, child, &outbox);
  children_.emplace(child, std::move(outbox));
  return reactor;
}

void Relay::Deliver(int child, v1::LauncherCommand command) {
  std::shared_ptr<SessionOutbox> outbox;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = children_.find(child);
    if (it != children_.end()) outbox = it->second;
  }
  if (!outbox) {
    undeliverable.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  commands_down.fetch_add(1, std::memory_order_relaxed);
  outbox->Send(std::move(command));
}

void Relay::ChildEnded(int child) {
  v1::RelayEntry entry;
  entry.set_child(child);
  entry.set_ended(true);
  upstream_->Queue(std::move(entry));
}

void Relay::Forget(int child) {
  std::lock_guard<std::mutex> lock(mu_);
  children_.erase(child);
}

void Relay::UpstreamEnded(const grpc::Status& status) {
  std::vector<std::shared_ptr<SessionOutbox>> open;
  {
    std::lock_guard<std::mutex> lock(mu_);
    upstream_done_ = true;  // no session opens from now on
    for (auto& [child, outbox] : children_) open.push_back(outbox);
  }
  // Each agent sees its session end, as when the launcher itself is gone.
  const grpc::Status why(grpc::StatusCode::UNAVAILABLE,
                         absl::StrCat("the relay's stream to the launcher ended: ",
                                      status.ok() ? "the launcher closed it" : status.error_message()));
  for (auto& outbox : open) outbox->Close(why);
  // Last: Wait may return, and the relay go, as soon as ended_ is set.
  std::lock_guard<std::mutex> lock(mu_);
  ended_ = true;
  end_status_ = status;
  ended_cv_.notify_all();
}

}  // namespace dlaunch
