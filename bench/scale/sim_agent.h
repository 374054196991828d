// The simulated agent of load_agents (bench/scale/load_agents.cc): SimAgent, one agent's Join
// and session stream (what the agents share is in sim_shared.h). Header-only: one program uses
// it.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "bench/scale/sim_shared.h"
#include "dlaunch/control.grpc.pb.h"
#include "proto/agent_batch.h"
#include "proto/grpc_status.h"

namespace dlaunch::load {

// One simulated agent: its Join, then its session stream (one write in flight, the rest queued).
// Reactions run on gRPC's threads and the ticker thread; `mu_` guards the agent's state.
class SimAgent final : public grpc::ClientBidiReactor<v1::AgentMessage, v1::LauncherCommand> {
 public:
  SimAgent(int index, const Options& opt, v1::Control::Stub* stub, const std::string& token)
      : index_(index), opt_(opt), stub_(stub), token_(token) {
    agent_id_ = "h" + std::to_string(index) + ":" + std::to_string(100000 + index) + ":load";
  }

  // Where a session that breaks moves to (the launcher itself, when the agent's --control is a
  // relay); null: nowhere.
  void SetFallback(v1::Control::Stub* stub) { fallback_stub_ = stub; }

  // The agent as it is now: this one, or the one its session moved to.
  SimAgent* Current() {
    SimAgent* a = this;
    while (SimAgent* next = a->successor_.load(std::memory_order_acquire)) a = next;
    return a;
  }

  void StartJoin() {
    join_ctx_.AddMetadata(kTokenMetadataKey, token_);
    join_ctx_.set_deadline(std::chrono::system_clock::now() +
                           milliseconds(static_cast<int64_t>(opt_.join_timeout_s * 1000) + 5000));
    join_ctx_.set_wait_for_ready(true);
    join_req_.set_agent_id(agent_id_);
    join_req_.set_host("h" + std::to_string(index_));
    join_req_.set_addr("127.0.0.1");
    join_req_.set_slots(opt_.slots);
    join_req_.set_gpus(0);
    join_req_.set_pid(100000 + index_);
    join_req_.set_worker_port(FakePort());
    stub_->async()->Join(&join_ctx_, &join_req_, &join_resp_,
                         [this](grpc::Status s) { OnJoined(std::move(s)); });
  }

  // A held StartRound is due: its ranks start, unless a stop ended the round meanwhile.
  void StartHeld() {
    std::unique_lock<std::mutex> lock(mu_);
    if (!held_ || closing_) return;
    held_ = false;
    StartRanks(lock);
    Kick(lock);
    g_restart_started.Saw(UnixNow());
  }

  // Called by the ticker: a heartbeat now, if the session is open.
  void Tick() {
    std::unique_lock<std::mutex> lock(mu_);
    if (!session_open_ || closing_) return;
    v1::AgentMessage hb = Message();
    auto* h = hb.mutable_heartbeat();
    h->set_agent_time_ms(std::chrono::duration_cast<milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count());
    h->set_workers_running(running_ ? local_world_size_ : 0);
    if (running_) {
      step_ += 10;
      const double interval = heartbeat_ms_ / 1000.0;
      for (int l = 0; l < local_world_size_; ++l) {
        v1::WorkerReport* r = h->add_reports();
        r->set_kind(v1::WorkerReport::STEP);
        r->set_rank(rank_offset_ + l);
        r->set_step(step_);
        r->set_samples(640);
        r->set_interval_s(interval);
        r->set_samples_per_sec(640 / interval);
        r->set_loss(1.0 / (1 + step_ / 100.0));
        r->set_total_steps(total_steps_);
        r->set_phase(v1::WorkerReport::TRAINING);
      }
      if (output_lines_ > 0) (*h->mutable_output_lines())[rank_offset_] = output_lines_;
    }
    Enqueue(std::move(hb), lock);
    if (running_ && opt_.log_lines_per_s > 0 && Forwarded(rank_offset_)) {
      const int n = std::max(1, static_cast<int>(opt_.log_lines_per_s * heartbeat_ms_ / 1000.0));
      v1::AgentMessage m = Message();
      auto* log = m.mutable_log();
      log->set_rank(rank_offset_);
      for (int k = 0; k < n; ++k) {
        log->add_lines("step " + std::to_string(step_) + " loss 0.5 line " + std::to_string(k));
      }
      output_lines_ += n;
      Enqueue(std::move(m), lock);
    }
  }

  // The job's work is done: every rank succeeds (as its worker processes would exit 0).
  void Succeed() {
    std::unique_lock<std::mutex> lock(mu_);
    if (!session_open_ || closing_ || !running_) return;
    EndRanks(v1::WorkerEvent::SUCCEEDED, lock);
    EndRound(lock);
    Kick(lock);
    // Rule (a) of agent_state.cc: with no next round possible, the agent leaves on its own.
    if (max_restarts_ == 0) CloseSession(lock);
  }

  // A lost node: the stream is cut without a word.
  void Lose() {
    std::unique_lock<std::mutex> lock(mu_);
    if (!session_open_ || closing_) return;
    lost_ = true;
    closing_ = true;
    lock.unlock();
    g_lost_at_unix = UnixNow();
    session_ctx_.TryCancel();
  }

  // Called by the ticker: a session half-closed this long ago without the launcher ending it is
  // cancelled, as ControlClient::Close does after its timeout.
  void MaybeCancelLingering(Clock::time_point now) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!closing_ || done_ || lost_ || cancel_sent_) return;
    if (now - close_asked_ < milliseconds(2000)) return;
    cancel_sent_ = true;
    lock.unlock();
    g.cancelled_after_close++;
    session_ctx_.TryCancel();
  }

  bool finished() const {
    std::lock_guard<std::mutex> lock(mu_);
    return done_;
  }

  // gRPC reactions.
  void OnWriteDone(bool ok) override {
    const v1::AgentMessage* next = nullptr;
    bool writes_done = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      outbox_.pop_front();
      if (!ok) {
        if (!lost_) g.write_failures++;
        outbox_.clear();
        writing_ = false;
        broken_ = true;
        return;
      }
      g.messages_sent += in_flight_;
      if (!outbox_.empty()) {
        next = NextWrite();
      } else {
        writing_ = false;
        if (closing_ && !writes_done_sent_ && !lost_) writes_done = writes_done_sent_ = true;
      }
    }
    if (next != nullptr) StartWrite(next);
    if (writes_done) StartWritesDone();
  }

  void OnReadDone(bool ok) override {
    if (!ok) return;  // the stream ended; OnDone has the status
    HandleCommand(in_);
    if (slow()) {  // the ticker reads the next one (ResumeSlowRead)
      std::lock_guard<std::mutex> lock(mu_);
      read_paused_ = true;
      return;
    }
    StartRead(&in_);
  }

  bool slow() const { return index_ < opt_.slow_readers; }

  // Called by the ticker every 2 s for a slow reader: one more command is read.
  void ResumeSlowRead() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!read_paused_ || done_) return;
      read_paused_ = false;
    }
    g.slow_reads++;
    StartRead(&in_);
  }

  void OnDone(const grpc::Status& s) override {
    bool move = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
      session_open_ = false;
      // As AgentState::OnSessionBroken: a broken session moves once, with a stop grace to spend.
      move = !lost_ && !closing_ && fallback_stub_ != nullptr && !moved_ && grace_ms_ > 0 &&
             s.error_code() == grpc::StatusCode::UNAVAILABLE;
    }
    if (move) {
      MoveToFallback();
      return;
    }
    if (lost_) {
      g.sessions_lost++;
    } else if (s.ok() || (cancel_sent_ && s.error_code() == grpc::StatusCode::CANCELLED)) {
      g.sessions_ok++;
    } else {
      if (g.sessions_error++ < 5) {
        Note("agent " + std::to_string(index_) + ": session ended: " + s.error_message());
      }
    }
  }

 private:
  int FakePort() const { return 20000 + (index_ * 7 + round_) % 40000; }

  // The session broke: a new SimAgent with this one's state opens a session with the fallback
  // (sim_agent_move.h).
  void MoveToFallback();
  // Called with `o.mu_` held, on a SimAgent nothing else reaches yet.
  void AdoptStateOf(const SimAgent& o);
  void OpenMovedSession();

  bool Forwarded(int rank) const {
    if (forward_all_ || forward_ranks_.empty()) return true;
    for (int r : forward_ranks_) {
      if (r == rank) return true;
    }
    return false;
  }

  void OnJoined(grpc::Status s) {
    if (!s.ok()) {
      if (g.join_errors++ < 5) {
        Note("agent " + std::to_string(index_) + ": join failed: " +
             std::to_string(s.error_code()) + " " + s.error_message());
      }
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
      return;
    }
    g.joins_answered++;
    const v1::JoinResponse& j = join_resp_;
    std::unique_lock<std::mutex> lock(mu_);
    node_id_ = j.node_id();
    heartbeat_ms_ = j.heartbeat_ms() > 0 ? j.heartbeat_ms() : 1000;
    grace_ms_ = j.grace_ms();
    g_heartbeat_ms = heartbeat_ms_;
    max_restarts_ = j.max_restarts();
    forward_all_ = j.forward_all();
    forward_ranks_.assign(j.forward_ranks().begin(), j.forward_ranks().end());
    round_ = j.round();
    spare_ = j.spare();
    if (spare_) g.spares++;
    Adopt(j);
    total_steps_ = static_cast<int64_t>(opt_.run_s * 1000 / heartbeat_ms_) * 10;
    session_ctx_.AddMetadata(kTokenMetadataKey, token_);
    stub_->async()->Session(&session_ctx_, this);
    StartRead(&in_);
    session_open_ = true;
    g.sessions_opened++;
    // As AgentState::OnSessionOpened: a member starts its first round's workers, then a
    // heartbeat goes up.
    if (!spare_) StartRanks(lock);
    lock.unlock();
    StartCall();
    Tick();
  }

  void Adopt(const v1::JoinResponse& place) {
    round_ = place.round();
    rank_offset_ = place.rank_offset();
    local_world_size_ = place.local_world_size();
  }

  v1::AgentMessage Message() const {
    v1::AgentMessage m;
    m.set_node_id(node_id_);
    m.set_agent_id(agent_id_);
    m.set_round(round_);
    m.set_sent_ms(SteadyMs());
    return m;
  }

  void Enqueue(v1::AgentMessage m, std::unique_lock<std::mutex>& lock) {
    Push(std::move(m));
    Kick(lock);
  }

  // Queues without starting a write. A sequence of messages (a round's STARTED, its ends and
  // RoundEnded) is pushed whole before the one Kick that may release the lock, so that another
  // thread cannot put its messages in between: an agent never reports a rank's end before its
  // start.
  void Push(v1::AgentMessage m) {
    if (broken_ || done_ || writes_done_sent_ || lost_) return;
    outbox_.push_back(std::move(m));
  }

  // Starts the write of the queue's head unless one is in flight; may release `lock` meanwhile.
  void Kick(std::unique_lock<std::mutex>& lock) {
    if (outbox_.empty() || writing_ || !call_started_) return;
    writing_ = true;
    const v1::AgentMessage* first = NextWrite();
    lock.unlock();
    StartWrite(first);
    lock.lock();
  }

  // The queue's head as the next write, with what is queued behind it in one AgentBatch, as
  // the agent's writer sends it (proto/agent_batch.h). Called with mu_ held.
  const v1::AgentMessage* NextWrite() {
    in_flight_ = 1;
    if (!opt_.batch) return &outbox_.front();
    std::vector<v1::AgentMessage> batch = TakeBatch(outbox_);
    in_flight_ = static_cast<int64_t>(batch.size());
    outbox_.push_front(Batched(std::move(batch)));
    return &outbox_.front();
  }

  void StartCall() {
    const v1::AgentMessage* first = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      call_started_ = true;
      if (!outbox_.empty() && !writing_) {
        writing_ = true;
        first = NextWrite();
      }
    }
    if (first != nullptr) StartWrite(first);
    grpc::ClientBidiReactor<v1::AgentMessage, v1::LauncherCommand>::StartCall();
  }

  void Event(int local_rank, v1::WorkerEvent::State state, std::unique_lock<std::mutex>& lock) {
    v1::AgentMessage m = Message();
    auto* w = m.mutable_worker();
    w->set_rank(rank_offset_ + local_rank);
    w->set_local_rank(local_rank);
    w->set_state(state);
    w->set_pid(200000 + (index_ * opt_.slots + local_rank) % 3000000);
    if (state == v1::WorkerEvent::STOPPED) w->set_signal(15);
    Push(std::move(m));
  }

  void StartRanks(std::unique_lock<std::mutex>& lock) {
    running_ = true;
    round_active_ = true;
    started_a_round_ = true;
    step_ = 0;
    for (int l = 0; l < local_world_size_; ++l) Event(l, v1::WorkerEvent::STARTED, lock);
  }

  void EndRanks(v1::WorkerEvent::State state, std::unique_lock<std::mutex>& lock) {
    for (int l = 0; l < local_world_size_; ++l) Event(l, state, lock);
    running_ = false;
  }

  void EndRound(std::unique_lock<std::mutex>& lock) {
    round_active_ = false;
    ended_round_ = round_;
    v1::AgentMessage m = Message();
    m.mutable_round_ended()->set_round(round_);
    m.mutable_round_ended()->set_worker_port(FakePort());
    Push(std::move(m));
  }

  void CloseSession(std::unique_lock<std::mutex>& lock) {
    if (closing_) return;
    closing_ = true;
    close_asked_ = Clock::now();
    if (writing_ || writes_done_sent_ || broken_) return;  // OnWriteDone half-closes
    writes_done_sent_ = true;
    lock.unlock();
    StartWritesDone();
    lock.lock();
  }

  void HandleCommand(const v1::LauncherCommand& cmd) {
    std::unique_lock<std::mutex> lock(mu_);
    if (moved_ && !answered_) {
      answered_ = true;
      g.moves_answered++;
      g_last_move_answered_unix.store(UnixNow());
    }
    if (cmd.has_stop()) {
      const v1::StopCommand& stop = cmd.stop();
      g.stops++;
      if (stop.exit()) g.stops_exit++;
      (stop.exit() ? g_exit_stops : g_round_stops).Saw(UnixNow());
      if (stop.round() < round_) {
        g.stale_commands++;
        return;
      }
      if (held_ || round_active_) {  // a held round ends with no rank run
        held_ = false;
        if (running_) EndRanks(v1::WorkerEvent::STOPPED, lock);
        EndRound(lock);
      } else if (!stop.exit() && ended_round_ == round_ && stop.round() == round_) {
        // The RoundEnded already sent may have crossed this stop: every stop ends in one.
        EndRound(lock);
      }
      Kick(lock);
      if (stop.exit()) CloseSession(lock);
    } else if (cmd.has_start()) {
      g.starts++;
      const v1::JoinResponse& place = cmd.start().place();
      if (closing_ || round_active_ || place.round() < round_ ||
          (started_a_round_ && place.round() == round_)) {
        g.stale_commands++;
        return;
      }
      spare_ = false;
      Adopt(place);
      g_restart_received.Saw(UnixNow());
      if (cmd.start().start_after_ms() > 0) {  // the ticker starts it (StartHeld)
        held_ = true;
        started_a_round_ = true;
        g_held_starts.Add(Clock::now() + milliseconds(cmd.start().start_after_ms()), index_);
        return;
      }
      StartRanks(lock);
      Kick(lock);
      g_restart_started.Saw(UnixNow());
    } else {
      g.pings++;
    }
  }

  const int index_;
  const Options& opt_;
  v1::Control::Stub* const stub_;
  const std::string& token_;
  std::string agent_id_;

  grpc::ClientContext join_ctx_;
  v1::JoinRequest join_req_;
  v1::JoinResponse join_resp_;
  grpc::ClientContext session_ctx_;
  v1::LauncherCommand in_;

  mutable std::mutex mu_;
  std::deque<v1::AgentMessage> outbox_;
  bool call_started_ = false;
  bool writing_ = false;
  int64_t in_flight_ = 0;  // messages in the write in flight (a batch holds several)
  bool writes_done_sent_ = false;
  bool broken_ = false;
  bool session_open_ = false;
  bool closing_ = false;
  bool cancel_sent_ = false;
  bool lost_ = false;
  bool done_ = false;
  bool read_paused_ = false;
  v1::Control::Stub* fallback_stub_ = nullptr;
  bool moved_ = false;     // this agent's session is a moved one (it moves no further)
  bool answered_ = false;  // the launcher's first command on the moved session came
  std::atomic<SimAgent*> successor_{nullptr};
  std::unique_ptr<SimAgent> successor_owned_;
  Clock::time_point close_asked_{};

  int node_id_ = -1;
  int round_ = 0;
  int ended_round_ = -1;
  int rank_offset_ = 0;
  int local_world_size_ = 0;
  int heartbeat_ms_ = 1000;
  int grace_ms_ = 0;
  int max_restarts_ = 0;
  bool spare_ = false;
  bool forward_all_ = false;
  std::vector<int> forward_ranks_;
  bool running_ = false;
  bool round_active_ = false;
  bool started_a_round_ = false;
  bool held_ = false;  // the round's StartRound came ahead of its start
  int64_t step_ = 0;
  int64_t total_steps_ = 0;
  int64_t output_lines_ = 0;
};

}  // namespace dlaunch::load

#include "bench/scale/sim_agent_move.h"
