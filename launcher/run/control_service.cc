#include "launcher/run/control_service.h"

#include "common/host_identity.h"
#include "proto/grpc_status.h"

#include <arpa/inet.h>

#include "absl/strings/str_cat.h"

namespace dlaunch {
namespace {

bool ConstantTimeEquals(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

bool AgentSession::Send(const v1::LauncherCommand& cmd) {
  std::lock_guard<std::mutex> lock(mu_);
  return stream_ != nullptr && stream_->Write(cmd);
}

void AgentSession::Detach() {
  std::lock_guard<std::mutex> lock(mu_);
  stream_ = nullptr;
}

ControlService::ControlService(std::string token, RendezvousConfig config,
                               v1::JoinResponse response_template, SessionHandler* handler)
    : token_(std::move(token)),
      template_(std::move(response_template)),
      handler_(handler),
      start_(std::chrono::steady_clock::now()),
      state_([&] {
        for (auto& h : config.host_order) h = ShortHostName(h);
        return config;
      }(), 0.0) {}

double ControlService::Now() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

bool ControlService::Authorized(grpc::ServerContext* ctx, const char* method) {
  const auto& md = ctx->client_metadata();
  auto it = md.find(kTokenMetadataKey);
  if (it != md.end() && ConstantTimeEquals(std::string(it->second.data(), it->second.size()), token_)) {
    return true;
  }
  handler_->OnRefused(ctx->peer(), method);
  return false;
}

void ControlService::ReportOutcomeLocked() {
  if (outcome_reported_) return;
  if (state_.phase() == RendezvousPhase::kClosed) {
    outcome_reported_ = true;
    handler_->OnRendezvousClosed(*state_.result());
  } else if (state_.phase() == RendezvousPhase::kFailed) {
    outcome_reported_ = true;
    handler_->OnRendezvousFailed(state_.failure());
  }
}

void ControlService::PollRendezvous() {
  std::lock_guard<std::mutex> lock(mu_);
  state_.Poll(Now());
  ReportOutcomeLocked();
  cv_.notify_all();
}

void ControlService::Shutdown() {
  std::lock_guard<std::mutex> lock(mu_);
  shutting_down_ = true;
  cv_.notify_all();
}

grpc::Status ControlService::Join(grpc::ServerContext* ctx, const v1::JoinRequest* req,
                                  v1::JoinResponse* resp) {
  if (!Authorized(ctx, "Join")) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "missing or wrong job token");
  }
  Participant p;
  p.agent_id = req->agent_id();
  p.host = ShortHostName(req->host());
  p.addr = req->addr();
  p.slots = req->slots();
  p.worker_port = req->worker_port();

  std::unique_lock<std::mutex> lock(mu_);
  if (auto st = state_.Join(p, Now()); !st.ok()) return ToGrpcStatus(st);
  handler_->OnJoined(p, state_.joined(), state_.config().max_nodes);
  cv_.notify_all();
  for (;;) {
    RendezvousPhase phase = state_.Poll(Now());
    ReportOutcomeLocked();
    if (phase == RendezvousPhase::kClosed) break;
    if (phase == RendezvousPhase::kFailed) return ToGrpcStatus(state_.failure());
    if (shutting_down_) return grpc::Status(grpc::StatusCode::CANCELLED, "launcher is stopping");
    if (ctx->IsCancelled()) {
      state_.Leave(p.agent_id, Now());
      return grpc::Status(grpc::StatusCode::CANCELLED, "agent went away");
    }
    // Wake at the next rendezvous deadline, and at least every 200 ms to notice a cancelled call.
    auto wait = std::chrono::milliseconds(200);
    if (auto d = state_.NextDeadline()) {
      wait = std::min(wait, std::chrono::milliseconds(static_cast<int64_t>(
                                std::max(0.0, (*d - Now()) * 1000) + 1)));
    }
    cv_.wait_for(lock, wait);
  }
  const NodeAssignment* a = state_.AssignmentFor(p.agent_id);
  if (a == nullptr) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "not a member of the closed round");
  }
  const RoundResult& r = *state_.result();
  *resp = template_;
  resp->set_round(r.round);
  resp->set_node_rank(a->node_rank);
  resp->set_nnodes(static_cast<int>(r.nodes.size()));
  resp->set_rank_offset(a->rank_offset);
  resp->set_local_world_size(a->local_world_size);
  resp->set_world_size(r.world_size);
  resp->set_master_addr(r.master_addr);
  resp->set_master_port(r.master_port);
  return grpc::Status::OK;
}

grpc::Status ControlService::Session(
    grpc::ServerContext* ctx,
    grpc::ServerReaderWriter<v1::LauncherCommand, v1::AgentMessage>* stream) {
  if (!Authorized(ctx, "Session")) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "missing or wrong job token");
  }
  auto session = std::make_shared<AgentSession>(stream);
  v1::AgentMessage msg;
  if (!stream->Read(&msg)) return grpc::Status::OK;
  session->agent_id = msg.agent_id();
  session->node_rank = msg.node_rank();
  handler_->OnSessionOpened(session);
  do {
    handler_->OnAgentMessage(session, msg);
  } while (stream->Read(&msg));
  session->Detach();
  handler_->OnSessionEnded(session);
  return grpc::Status::OK;
}

}  // namespace dlaunch
