#include "launcher/control/relay_reactor.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "launcher/control/control_service.h"
#include "proto/session_outbox.h"

namespace dlaunch {
namespace {

using RelayReactorBase = grpc::ServerBidiReactor<v1::RelayUp, v1::RelayDown>;

// Commands for every agent behind one relay, with one RelayDown write in flight.
class RelayOutbox {
 public:
  explicit RelayOutbox(RelayReactorBase* reactor) : reactor_(reactor) {}

  void Send(int child, v1::LauncherCommand command) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (closed_) return;
      auto last = last_.find(child);
      if (last != last_.end() && IsPing(queued_[last->second].command())) {
        // The queued ping says only the newest heard_ms, which this command carries too.
        *queued_[last->second].mutable_command() = std::move(command);
      } else {
        last_[child] = queued_.size();
        v1::RelayCommand& c = queued_.emplace_back();
        c.set_child(child);
        *c.mutable_command() = std::move(command);
      }
      if (writing_) return;
      writing_ = true;
      TakeQueued();
    }
    reactor_->StartWrite(&out_);
  }

  void OnWriteDone(bool ok) {
    bool next = false, finish = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!ok) {  // the stream is broken; the read side will see it
        closed_ = true;
        queued_.clear();
        last_.clear();
      }
      if (!closed_ && !queued_.empty()) {
        TakeQueued();
        next = true;
      } else {
        writing_ = false;
        finish = finish_wanted_;
        finish_wanted_ = false;
      }
    }
    if (next) reactor_->StartWrite(&out_);
    if (finish) reactor_->Finish(grpc::Status::OK);
  }

  // The relay's side ended: drop what is queued, finish once no write is in flight.
  void Close() {
    bool finish = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      closed_ = true;
      queued_.clear();
      last_.clear();
      finish = !writing_;
      finish_wanted_ = writing_;
    }
    if (finish) reactor_->Finish(grpc::Status::OK);
  }

 private:
  // Moves up to kRelayDownMaxCommands queued commands into out_ (mu_ held).
  void TakeQueued() {
    out_.Clear();
    const size_t n = std::min(queued_.size(), static_cast<size_t>(kRelayDownMaxCommands));
    for (size_t i = 0; i < n; ++i) *out_.add_commands() = std::move(queued_[i]);
    queued_.erase(queued_.begin(), queued_.begin() + static_cast<std::ptrdiff_t>(n));
    last_.clear();
    for (size_t i = 0; i < queued_.size(); ++i) last_[queued_[i].child()] = i;
  }

  RelayReactorBase* const reactor_;  // outlives every call: OnDone comes after Finish
  std::mutex mu_;
  std::vector<v1::RelayCommand> queued_;
  std::unordered_map<int, size_t> last_;  // child -> index of its newest queued command
  v1::RelayDown out_;                     // the write in flight
  bool writing_ = false;
  bool closed_ = false;
  bool finish_wanted_ = false;
};

// One agent's session as the handler sees it.
class RelayedSession final : public AgentSession {
 public:
  RelayedSession(std::shared_ptr<RelayOutbox> outbox, int child)
      : outbox_(std::move(outbox)), child_(child) {}
  void Send(v1::LauncherCommand command) override {
    if (!ended_.load(std::memory_order_acquire)) outbox_->Send(child_, std::move(command));
  }
  void End() { ended_.store(true, std::memory_order_release); }

 private:
  std::shared_ptr<RelayOutbox> outbox_;
  const int child_;
  std::atomic<bool> ended_{false};
};

class RelayReactor final : public RelayReactorBase {
 public:
  RelayReactor(ControlService* service, std::string peer)
      : service_(service), peer_(std::move(peer)), outbox_(std::make_shared<RelayOutbox>(this)) {
    StartRead(&in_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      EndAll();
      outbox_->Close();
      return;
    }
    // Reads come one at a time, so children_ is only touched here. What the handler is to see
    // goes to the loop as one task, in the order the relay sent it.
    std::vector<Step> steps;
    steps.reserve(static_cast<size_t>(in_.entries_size()) + 4);
    for (v1::RelayEntry& e : *in_.mutable_entries()) {
      switch (e.body_case()) {
        case v1::RelayEntry::kMessage: {
          auto it = children_.find(e.child());
          if (it == children_.end()) {
            Child c{service_->NewSessionId(), e.message().node_id(),
                    std::make_shared<RelayedSession>(outbox_, e.child())};
            it = children_.emplace(e.child(), c).first;
            steps.push_back({Step::kOpened, c.session_id, c.node, c.session, {}, {}});
          }
          steps.push_back({Step::kMessage, it->second.session_id, it->second.node, nullptr,
                           std::move(*e.mutable_message()), {}});
          break;
        }
        case v1::RelayEntry::kEnded: {
          auto it = children_.find(e.child());
          if (it == children_.end()) break;
          it->second.session->End();
          steps.push_back({Step::kEnded, it->second.session_id, it->second.node, nullptr, {}, {}});
          children_.erase(it);
          break;
        }
        case v1::RelayEntry::kRefused:
          steps.push_back({Step::kRefused, 0, 0, nullptr, {}, std::move(*e.mutable_refused())});
          break;
        default:
          break;
      }
    }
    in_.Clear();
    if (!steps.empty()) service_->Post([h = service_->handler(), steps = std::move(steps)] {
      for (const Step& s : steps) Run(h, s);
    });
    StartRead(&in_);
  }
  void OnWriteDone(bool ok) override { outbox_->OnWriteDone(ok); }
  void OnDone() override { delete this; }

 private:
  struct Child {
    int session_id;
    int node;
    std::shared_ptr<RelayedSession> session;
  };
  struct Step {
    enum Kind { kOpened, kMessage, kEnded, kRefused } kind;
    int session_id;
    int node;
    std::shared_ptr<AgentSession> session;
    v1::AgentMessage message;
    v1::RelayRefused refused;
  };

  static void Run(ControlHandler* h, const Step& s) {
    switch (s.kind) {
      case Step::kOpened: return h->HandleSessionOpened(s.session_id, s.node, s.session);
      case Step::kMessage: return HandleAgentMessageOrBatch(h, s.session_id, s.node, s.message);
      case Step::kEnded: return h->HandleSessionEnded(s.session_id, s.node);
      case Step::kRefused:
        return h->HandleRefused(s.refused.peer() + " (via a relay)", s.refused.method());
    }
  }

  // The relay's stream ended with sessions still on it: they are moving (the relay went, and
  // their agents may come back directly; ControlHandler::HandleSessionsMoving).
  void EndAll() {
    std::vector<std::pair<int, int>> moving;
    for (auto& [child, c] : children_) {
      c.session->End();
      moving.emplace_back(c.session_id, c.node);
    }
    children_.clear();
    if (!moving.empty()) {
      service_->Post([h = service_->handler(), peer = peer_, moving = std::move(moving)] {
        h->HandleSessionsMoving(peer, moving);
      });
    }
  }

  ControlService* service_;
  const std::string peer_;
  std::shared_ptr<RelayOutbox> outbox_;
  std::unordered_map<int, Child> children_;
  v1::RelayUp in_;
};

class RefusedRelayReactor final : public RelayReactorBase {
 public:
  explicit RefusedRelayReactor(grpc::Status status) { Finish(std::move(status)); }
  void OnDone() override { delete this; }
};

}  // namespace

RelayReactorBase* NewRelayReactor(ControlService* service, std::string peer) {
  return new RelayReactor(service, std::move(peer));
}
RelayReactorBase* RefusedRelay(grpc::Status status) {
  return new RefusedRelayReactor(std::move(status));
}

}  // namespace dlaunch
