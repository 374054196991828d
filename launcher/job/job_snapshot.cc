#include "launcher/job/job_snapshot.h"

#include <algorithm>

namespace dlaunch {
namespace {

// The node's ranks, as its row shows them.
struct NodeRanks {
  bool any = false;
  bool reported_step = false;  // a rank sent any report (a phase report carries its step)
  bool reported_rate = false;  // a rank sent a report with samples
  bool all_succeeded = true;
  bool failed = false;
  int64_t step = 0;
  double rate = 0;
  v1::WorkerReport::Phase phase = v1::WorkerReport::PHASE_UNSPECIFIED;
};

// Every node's ranks in one pass over the ranks.
std::map<int, NodeRanks> RanksByNode(const std::map<int, RankProgress>& ranks) {
  std::map<int, NodeRanks> by_node;
  for (const auto& [rank, r] : ranks) {
    NodeRanks& out = by_node[r.node];
    out.any = true;
    out.all_succeeded = out.all_succeeded && r.state == v1::WorkerEvent::SUCCEEDED;
    out.failed = out.failed || r.state == v1::WorkerEvent::FAILED;
    out.step = std::max(out.step, r.step);
    out.reported_rate = out.reported_rate || r.has_loss;
    out.reported_step = out.reported_step || out.reported_rate || r.step > 0 ||
                        r.phase != v1::WorkerReport::PHASE_UNSPECIFIED;
    if (WorkerEnded(r.state)) continue;
    out.rate += r.recent_rate;
    // A rank away from training (evaluating, checkpointing) is what the row shows.
    if (r.phase != v1::WorkerReport::PHASE_UNSPECIFIED &&
        (out.phase == v1::WorkerReport::PHASE_UNSPECIFIED || out.phase == v1::WorkerReport::TRAINING)) {
      out.phase = r.phase;
    }
  }
  return by_node;
}

std::string NodeState(const NodeRecord& n, const NodeRanks& r, double since_heard_s,
                      double silent_after_s, bool moving) {
  if (n.gone()) return "gone";
  if (r.failed) return "failed";
  if (r.any && r.all_succeeded) return "done";
  if (n.session_state == SessionState::kEnded) return "ended";
  if (n.session_state == SessionState::kNotOpened) return "waiting";
  if (moving) return "moving";
  if (since_heard_s > silent_after_s) return "silent";
  if (n.spare()) return "spare";
  return n.workers_running > 0 ? "running" : "idle";
}

}  // namespace

void StepClock::Note(int64_t step, int64_t total_steps, double now_s) {
  total_steps_ = std::max(total_steps_, total_steps);
  if (step <= last_.second) return;
  if (!first_) first_ = {now_s, step};
  last_ = {now_s, step};
}

double StepClock::EtaS(double now_s) const {
  if (total_steps_ <= 0 || !first_ || last_.first <= first_->first || last_.second <= first_->second) {
    return -1;
  }
  const double steps_per_s = (last_.second - first_->second) / (last_.first - first_->first);
  const double left = std::max<double>(0, total_steps_ - last_.second) / steps_per_s;
  return std::max(0.0, left - (now_s - last_.first));
}

v1::JobSnapshot BuildJobSnapshot(const SnapshotInputs& in, double now_s) {
  v1::JobSnapshot s;
  s.set_job_id(in.job_id);
  s.set_elapsed_s(now_s);
  s.set_nodes_expected(in.nodes_expected);
  s.set_world_size(in.round ? in.round->world_size : 0);
  s.set_round(in.round ? in.round->round : 0);
  s.set_total_steps(in.steps->total_steps());
  const std::map<int, NodeRanks> by_node = RanksByNode(*in.ranks);
  for (const auto& [id, r] : by_node) {
    if (r.reported_step) s.set_step(in.steps->step());
  }
  for (const auto& [id, n] : in.nodes->all()) {
    auto found = by_node.find(id);
    const NodeRanks r = found == by_node.end() ? NodeRanks{} : found->second;
    const int node_rank = in.nodes->NodeRankOf(id);
    const bool member = node_rank >= 0 && in.round && node_rank < static_cast<int>(in.round->assignments.size());
    const double since = n.session_state == SessionState::kNotOpened ? -1 : now_s - n.last_seen_s;
    v1::NodeSnapshot* ns = s.add_nodes();
    ns->set_node(id);
    ns->set_node_rank(member ? node_rank : -1);
    ns->set_host(n.host);
    ns->set_state(NodeState(n, r, since, in.silent_after_s, in.moving && in.moving->moving(id)));
    ns->set_workers_running(n.open() ? n.workers_running : 0);
    ns->set_slots(member ? in.round->assignments[node_rank].local_world_size : 0);
    ns->set_since_heartbeat_s(since);
    for (const v1::GpuSample& g : n.gpus) *ns->add_gpus() = g;
    if (n.health.mem_total_kb() > 0) *ns->mutable_health() = n.health;
    // Left unset, not 0, while nothing was reported: the table shows "-" for them.
    if (r.reported_step) ns->set_step(r.step);
    if (r.reported_rate) {
      ns->set_samples_per_sec(r.rate);
      s.set_samples_per_sec(s.samples_per_sec() + r.rate);
    }
    ns->set_phase(PhaseName(r.phase));
  }
  s.set_phase(JobPhase(*in.ranks));
  for (const auto& [rank, r] : *in.ranks) s.set_samples(s.samples() + r.samples);
  s.set_eta_s(in.steps->EtaS(now_s));
  if (in.exit_code) {
    s.set_ended(true);
    s.set_exit_code(*in.exit_code);
  }
  return s;
}

}  // namespace dlaunch
