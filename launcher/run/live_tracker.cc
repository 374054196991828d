#include "launcher/run/live_tracker.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "common/liveness_policy.h"

namespace dlaunch {
namespace {

bool Ended(v1::WorkerEvent::State s) {
  return s == v1::WorkerEvent::SUCCEEDED || s == v1::WorkerEvent::FAILED ||
         s == v1::WorkerEvent::STOPPED;
}

}  // namespace

LiveTracker::LiveTracker(std::string job_id, int nodes_expected)
    : job_id_(std::move(job_id)), nodes_expected_(nodes_expected) {}

void LiveTracker::OnJoined(const std::string& host, const v1::JoinResponse& place) {
  Node& n = nodes_[place.node_id()];
  n.host = host;
  n.spare = place.spare();
  n.slots = place.spare() ? 0 : place.local_world_size();
  if (!place.spare()) world_size_ = place.world_size();
  if (place.heartbeat_ms() > 0) {
    const LivenessPolicy policy(std::chrono::milliseconds(place.heartbeat_ms()),
                                place.heartbeat_misses());
    silent_after_s_ = std::chrono::duration<double>(policy.silent_after()).count();
  }
}

void LiveTracker::OnSessionOpened(int node, double now_s) {
  Node& n = nodes_[node];
  n.session_open = true;
  n.session_ended = false;
  n.last_heartbeat_s = now_s;
}

void LiveTracker::OnAgentMessage(int node, const v1::AgentMessage& message, double now_s) {
  Node& n = nodes_[node];
  if (message.has_worker()) {
    Rank& r = ranks_[message.worker().rank()];
    r.node = node;
    r.state = message.worker().state();
    if (Ended(r.state)) r.recent_rate = 0;
    return;
  }
  if (!message.has_heartbeat()) return;
  const v1::Heartbeat& hb = message.heartbeat();
  n.last_heartbeat_s = now_s;
  n.workers_running = hb.workers_running();
  n.gpus.assign(hb.gpus().begin(), hb.gpus().end());
  int64_t job_step = last_step_.second;
  for (const v1::WorkerReport& report : hb.reports()) {
    Rank& r = ranks_[report.rank()];
    r.node = node;
    r.step = std::max<int64_t>(r.step, report.step());
    r.samples += report.samples();
    if (report.interval_s() > 0) {
      r.recent_rate = report.samples() / report.interval_s();
    } else if (report.samples_per_sec() > 0) {
      r.recent_rate = report.samples_per_sec();
    }
    total_steps_ = std::max<int64_t>(total_steps_, report.total_steps());
    job_step = std::max<int64_t>(job_step, report.step());
  }
  NoteStep(job_step, now_s);
}

void LiveTracker::NoteStep(int64_t step, double now_s) {
  if (step <= last_step_.second) return;
  if (!first_step_) first_step_ = {now_s, step};
  last_step_ = {now_s, step};
}

void LiveTracker::OnSessionEnded(int node) {
  Node& n = nodes_[node];
  n.session_open = false;
  n.session_ended = true;
  n.workers_running = 0;
}

void LiveTracker::OnEnded(int exit_code) { exit_code_ = exit_code; }

std::string LiveTracker::NodeState(int id, const Node& n, double now_s) const {
  bool any_rank = false, all_succeeded = true, failed = false;
  for (const auto& [rank, r] : ranks_) {
    if (r.node != id) continue;
    any_rank = true;
    all_succeeded = all_succeeded && r.state == v1::WorkerEvent::SUCCEEDED;
    failed = failed || r.state == v1::WorkerEvent::FAILED;
  }
  if (failed) return "failed";
  if (any_rank && all_succeeded) return "done";
  if (n.session_ended) return "ended";
  if (!n.session_open) return "waiting";
  if (n.last_heartbeat_s && now_s - *n.last_heartbeat_s > silent_after_s_) return "silent";
  if (n.spare) return "spare";
  return n.workers_running > 0 ? "running" : "idle";
}

v1::JobSnapshot LiveTracker::Snapshot(double now_s) const {
  v1::JobSnapshot s;
  s.set_job_id(job_id_);
  s.set_elapsed_s(now_s);
  s.set_nodes_expected(nodes_expected_);
  s.set_world_size(world_size_);
  s.set_total_steps(total_steps_);
  s.set_step(last_step_.second);
  for (const auto& [id, n] : nodes_) {
    v1::NodeSnapshot* ns = s.add_nodes();
    ns->set_node(id);
    ns->set_host(n.host);
    ns->set_state(NodeState(id, n, now_s));
    ns->set_workers_running(n.workers_running);
    ns->set_slots(n.slots);
    ns->set_since_heartbeat_s(n.last_heartbeat_s ? now_s - *n.last_heartbeat_s : -1);
    for (const v1::GpuSample& g : n.gpus) *ns->add_gpus() = g;
    int64_t step = 0;
    double rate = 0;
    for (const auto& [rank, r] : ranks_) {
      if (r.node != id) continue;
      step = std::max(step, r.step);
      if (!Ended(r.state)) rate += r.recent_rate;
    }
    ns->set_step(step);
    ns->set_samples_per_sec(rate);
    s.set_samples_per_sec(s.samples_per_sec() + rate);
  }
  for (const auto& [rank, r] : ranks_) s.set_samples(s.samples() + r.samples);
  s.set_eta_s(-1);
  if (total_steps_ > 0 && first_step_ && last_step_.first > first_step_->first &&
      last_step_.second > first_step_->second) {
    double steps_per_s = (last_step_.second - first_step_->second) /
                         (last_step_.first - first_step_->first);
    s.set_eta_s(std::max<double>(0, total_steps_ - last_step_.second) / steps_per_s);
  }
  if (exit_code_) {
    s.set_ended(true);
    s.set_exit_code(*exit_code_);
  }
  return s;
}

}  // namespace dlaunch
