// NodeAgent's connection to the launcher: the Join, the session, and a session that broke (its
// relay went) moving to the launcher itself with the workers running on meanwhile
// (docs/relays.md, "When a relay is lost"). AgentState decides whether and for how long; this
// file opens the new session and carries over what the broken one had not had acknowledged.
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "agent/placement/local_rank_plan.h"
#include "agent/node_agent.h"
#include "common/host_identity.h"

namespace dlaunch {

absl::StatusOr<v1::JoinResponse> NodeAgent::Join(const GpuInventory& gpus,
                                                 const std::vector<v1::CheckResult>& checks) {
  v1::JoinRequest join;
  for (const v1::CheckResult& c : checks) *join.add_checks() = c;
  join.set_agent_id(agent_id_);
  join.set_host(options_.host);
  join.set_addr(options_.addr);
  join.set_slots(options_.nproc > 0 ? options_.nproc : DefaultProcsPerNode(gpus));
  join.set_gpus(gpus.count());
  join.set_pid(getpid());
  join.set_worker_port(FreePort(options_.addr));
  absl::StatusOr<v1::JoinResponse> joined = client_->Join(join, JoinTimeout());
  // Its relay went before the round closed: this agent joins the launcher itself.
  if (!joined.ok() && FallBackBeforeJoining("join", joined.status())) {
    joined = client_->Join(join, JoinTimeout());
  }
  return joined;
}

bool NodeAgent::FallBackBeforeJoining(const char* call, const absl::Status& failed) {
  if (failed.code() != absl::StatusCode::kUnavailable || !HasFallback()) return false;
  Log(absl::StrCat("the ", call, " through ", options_.control, " failed (", failed.message(),
                   "); going to ", options_.control_fallback));
  options_.control = options_.control_fallback;
  client_ = std::make_unique<ControlClient>(options_.control, options_.credentials);
  return true;
}

absl::Status NodeAgent::OpenSession() {
  absl::Status st = OpenSessionOn(*client_);
  if (st.ok()) Apply(state_->OnSessionOpened(clock_.Now()));
  return st;
}

absl::Status NodeAgent::OpenSessionOn(ControlClient& client) {
  return client.OpenSession(
      [this](const v1::LauncherCommand& c) { boost::asio::post(io_, [this, c] { OnCommand(c); }); },
      [this](const std::string& why, bool broken) {
        boost::asio::post(io_, [this, why, broken] { OnSessionLost(why, broken); });
      });
}

void NodeAgent::OnSessionLost(const std::string& why, bool broken) {
  if (state_->moving()) {
    // The new session broke too, or a late word from the old one: the move is over either way
    // (the launcher's own address is the last place to go).
    Apply(state_->OnMoveFailed(clock_.Now(), why));
  } else if (broken) {
    Apply(state_->OnSessionBroken(clock_.Now(), why));
  } else {
    Apply(state_->OnSessionClosed(why, clock_.Now()));
  }
}

void NodeAgent::MoveSessionToFallback(const MoveSession& move) {
  Log(absl::StrCat("moving the session to ", options_.control_fallback, " (giving up after ",
                   move.give_up_after.count(), " ms)"));
  clock_.RunAfter(move.give_up_after, [this] { Apply(state_->OnMoveDeadline(clock_.Now())); });
  if (move_thread_.joinable()) move_thread_.join();
  move_thread_ = std::thread([this, target = options_.control_fallback,
                              creds = options_.credentials] {
    auto next = std::make_unique<ControlClient>(target, creds);
    absl::Status opened = OpenSessionOn(*next);
    boost::asio::post(io_, [this, next = std::move(next), opened]() mutable {
      AdoptMovedSession(std::move(next), opened);
    });
  });
}

void NodeAgent::AdoptMovedSession(std::unique_ptr<ControlClient> next, absl::Status opened) {
  if (!opened.ok()) {
    Apply(state_->OnMoveFailed(clock_.Now(), std::string(opened.message())));
    return;
  }
  if (!state_->moving()) {  // given up meanwhile: the workers are stopping
    next->Close(std::chrono::milliseconds(0));
    return;
  }
  // The broken session's threads are done; what it had not had acknowledged goes first.
  client_->Close(std::chrono::milliseconds(0));
  ControlClient::Unsent unsent = client_->TakeUnsent();
  Log(absl::StrCat("session opened with ", options_.control_fallback, "; ",
                   unsent.messages.size(), " message(s) not acknowledged go again"));
  next->Resume(std::move(unsent));
  client_ = std::move(next);
  client_->Wake();
  Apply(state_->OnSessionMoved(clock_.Now()));
}

}  // namespace dlaunch
