#include "launcher/job/job_events.h"

#include "absl/strings/ascii.h"
#include "dlaunch/journal.pb.h"
#include "proto/journal_schema.h"
#include "launcher/job/job_view.h"

namespace dlaunch {
namespace {

v1::MetricLine MetricLineAt(const std::string& time, int node_id, int round) {
  v1::MetricLine m;
  m.set_time(time);
  m.set_node_id(node_id);
  m.set_round(round);
  return m;
}

v1::JobEvent InRound(int round) {
  v1::JobEvent e;
  e.set_round(round);
  return e;
}

}  // namespace

v1::FailureRecord FailureRecordOf(const Failure& f) {
  v1::FailureRecord r;
  r.set_failure_class(FailureClassName(f.cls));
  r.set_rank(f.global_rank);
  r.set_local_rank(f.local_rank);
  r.set_node_id(f.node_id);
  r.set_node_rank(f.node_rank);
  r.set_host(f.host);
  if (f.exit_code >= 0) r.set_exit_code(f.exit_code);
  r.set_signal(f.signal);
  r.set_detected_at_s(f.detected_at_s);
  r.set_after_stop(f.after_stop);
  r.set_detail(f.detail);
  r.set_description(DescribeFailure(f));
  for (const auto& line : f.log_tail) r.add_log_tail(line);
  if (f.stuck_at) {
    v1::StuckAt* at = r.mutable_stuck_at();
    at->set_function(f.stuck_at->function);
    at->set_file(f.stuck_at->file);
    at->set_line(f.stuck_at->line);
    at->set_source(f.stuck_at->source);
    at->set_stacks(f.stuck_at->stacks);
  }
  return r;
}

v1::MetricLine HostLineOf(const std::string& time, int node_id, int round,
                          const v1::HostSample& host, const std::vector<v1::GpuSample>& gpus) {
  v1::MetricLine m = MetricLineAt(time, node_id, round);
  *m.mutable_host() = host;
  for (const v1::GpuSample& g : gpus) *m.add_gpus() = g;
  return m;
}

v1::MetricLine MetricLineOf(const std::string& time, int node_id, int round,
                            const v1::WorkerReport& report) {
  v1::MetricLine m = MetricLineAt(time, node_id, round);
  *m.mutable_report() = report;
  return m;
}

v1::JobEvent JournalOpenedEvent(const std::string& job_id) {
  v1::JobEvent e;
  e.mutable_journal_opened()->set_schema_version(kJournalSchemaVersion);
  e.mutable_journal_opened()->set_job_id(job_id);
  return e;
}

v1::JobEvent JobStartedEvent(const std::string& job_id, const std::vector<std::string>& hosts,
                             const std::string& node_launcher, const std::string& job_dir) {
  v1::JobEvent e;
  auto* s = e.mutable_job_started();
  s->set_job_id(job_id);
  s->set_nodes(static_cast<int>(hosts.size()));
  s->set_node_launcher(node_launcher);
  for (const auto& h : hosts) s->add_hosts(h);
  s->set_job_dir(job_dir);
  return e;
}

v1::JobEvent NodeJoinedEvent(const Participant& p, int joined, int expected) {
  v1::JobEvent e;
  auto* j = e.mutable_node_joined();
  j->set_host(p.host);
  j->set_addr(p.addr);
  j->set_slots(p.slots);
  j->set_joined(joined);
  for (const v1::CheckResult& c : p.checks) *j->add_checks() = c;
  j->set_expected(expected);
  return e;
}

v1::JobEvent NodeUnfitEvent(const Participant& p) {
  v1::JobEvent e;
  auto* u = e.mutable_node_unfit();
  u->set_host(p.host);
  u->set_addr(p.addr);
  for (const v1::CheckResult& c : p.checks) *u->add_checks() = c;
  return e;
}

v1::JobEvent SpareJoinedEvent(int round, int node_id, const Participant& p) {
  v1::JobEvent e = InRound(round);
  auto* s = e.mutable_spare_joined();
  s->set_node_id(node_id);
  s->set_host(p.host);
  s->set_addr(p.addr);
  s->set_slots(p.slots);
  return e;
}

v1::JobEvent RendezvousClosedEvent(const RoundResult& r, const std::vector<int>& node_ids,
                                   double elapsed_s) {
  v1::JobEvent e = InRound(r.round);
  auto* c = e.mutable_rendezvous_closed();
  c->set_world_size(r.world_size);
  c->set_master_addr(r.master_addr);
  c->set_master_port(r.master_port);
  for (const auto& n : r.nodes) c->add_node_order(n.host);
  for (int id : node_ids) c->add_node_ids(id);
  c->set_elapsed_s(elapsed_s);
  return e;
}

v1::JobEvent RoundStartedEvent(const RoundResult& r, const std::vector<int>& node_ids) {
  v1::JobEvent e = InRound(r.round);
  auto* s = e.mutable_round_started();
  for (int id : node_ids) s->add_node_ids(id);
  s->set_world_size(r.world_size);
  s->set_master_addr(r.master_addr);
  s->set_master_port(r.master_port);
  return e;
}

std::optional<v1::JobEvent> WorkerLifecycleEvent(int round, const NodePlace& node,
                                                 const v1::WorkerEvent& ev) {
  v1::JobEvent e = InRound(round);
  if (ev.state() == v1::WorkerEvent::STARTED) {
    auto* s = e.mutable_worker_started();
    s->set_rank(ev.rank());
    s->set_local_rank(ev.local_rank());
    s->set_node_id(node.node_id);
    s->set_node_rank(node.node_rank);
    s->set_host(node.host);
    s->set_pid(ev.pid());
    s->set_restart_path(ev.restart_path());
    s->set_restart_why(ev.restart_why());
    s->set_start_path(ev.start_path());
    return e;
  }
  if (!WorkerEnded(ev.state())) return std::nullopt;
  auto* d = e.mutable_worker_ended();
  d->set_rank(ev.rank());
  d->set_node_id(node.node_id);
  d->set_node_rank(node.node_rank);
  d->set_host(node.host);
  d->set_state(absl::AsciiStrToLower(v1::WorkerEvent::State_Name(ev.state())));
  d->set_exit_code(ev.exit_code());
  d->set_signal(ev.signal());
  return e;
}

v1::JobEvent WorkersStartedEvent(int round, int nodes, int workers, double elapsed_s,
                                 double restart_s) {
  v1::JobEvent e = InRound(round);
  auto* s = e.mutable_workers_started();
  s->set_workers(workers);
  s->set_elapsed_s(elapsed_s);
  s->set_restart_s(restart_s);
  s->set_nodes(nodes);
  return e;
}

v1::JobEvent WorkerFailedEvent(int round, const NodePlace& node, const v1::WorkerEvent& ev) {
  v1::JobEvent e = InRound(round);
  auto* f = e.mutable_worker_failed();
  f->set_rank(ev.rank());
  f->set_node_id(node.node_id);
  f->set_node_rank(node.node_rank);
  f->set_host(node.host);
  f->set_exit_code(ev.exit_code());
  f->set_signal(ev.signal());
  return e;
}

v1::JobEvent StacksRecordedEvent(int round, const NodePlace& node, const v1::RankStacks& stacks) {
  v1::JobEvent e = InRound(round);
  auto* r = e.mutable_stacks_recorded();
  r->set_rank(stacks.rank());
  r->set_node_id(node.node_id);
  r->set_host(node.host);
  r->set_path(stacks.path());
  r->set_source(stacks.source());
  r->set_stuck_function(stacks.stuck_at().function());
  r->set_stuck_file(stacks.stuck_at().file());
  r->set_stuck_line(stacks.stuck_at().line());
  r->set_waiting_function(stacks.waiting_in().function());
  r->set_waiting_file(stacks.waiting_in().file());
  r->set_waiting_line(stacks.waiting_in().line());
  r->set_why_none(stacks.why_none());
  r->set_recorder_path(stacks.flight_record().path());
  r->set_recorder_entries(stacks.flight_record().entries());
  r->set_recorder_last_seq(stacks.flight_record().last_seq());
  r->set_recorder_last_collective(stacks.flight_record().last_collective());
  return e;
}

v1::JobEvent RelayLostEvent(int round, const std::string& relay, const std::vector<int>& nodes) {
  v1::JobEvent e = InRound(round);
  auto* r = e.mutable_relay_lost();
  r->set_relay(relay);
  r->set_nodes(static_cast<int32_t>(nodes.size()));
  for (int id : nodes) r->add_node_ids(id);
  return e;
}

v1::JobEvent SessionResumedEvent(int round, const NodePlace& node, double after_s,
                                 const std::string& relay, bool relay_back) {
  v1::JobEvent e = InRound(round);
  auto* r = e.mutable_session_resumed();
  r->set_node_id(node.node_id);
  r->set_host(node.host);
  r->set_after_s(after_s);
  r->set_relay(relay);
  r->set_relay_back(relay_back);
  return e;
}

v1::JobEvent NodeLostEvent(int round, const NodePlace& node, const std::string& reason) {
  v1::JobEvent e = InRound(round);
  auto* l = e.mutable_node_lost();
  l->set_node_id(node.node_id);
  l->set_node_rank(node.node_rank);
  l->set_host(node.host);
  l->set_reason(reason);
  return e;
}

v1::JobEvent FailureDetectedEvent(int round, const Failure& failure) {
  v1::JobEvent e = InRound(round);
  *e.mutable_failure_detected()->mutable_failure() = FailureRecordOf(failure);
  return e;
}

v1::JobEvent RootCauseEvent(int round, const Failure& root, int consequences, bool revises) {
  v1::JobEvent e = InRound(round);
  *e.mutable_root_cause()->mutable_failure() = FailureRecordOf(root);
  e.mutable_root_cause()->set_consequences(consequences);
  e.mutable_root_cause()->set_revises(revises);
  return e;
}

v1::JobEvent HangDetectedEvent(int round, const Failure& f, const Hang& h, double now_s,
                               const std::vector<int>& hung) {
  v1::JobEvent e = InRound(round);
  auto* d = e.mutable_hang_detected();
  d->set_failure_class(FailureClassName(f.cls));
  d->set_rank(f.global_rank);
  d->set_local_rank(f.local_rank);
  d->set_node_id(f.node_id);
  d->set_node_rank(f.node_rank);
  d->set_host(f.host);
  d->set_silent_s(h.silent_s);
  d->set_limit_s(h.limit_s);
  d->set_detected_at_s(now_s);
  for (int r : hung) d->add_hung_ranks(r);
  return e;
}

v1::JobEvent StopRequestedEvent(int round, const std::string& reason) {
  v1::JobEvent e = InRound(round);
  e.mutable_stop_requested()->set_reason(reason);
  return e;
}

v1::JobEvent JobFinishedEvent(int round, const std::string& result, int exit_code,
                              double wall_time_s) {
  v1::JobEvent e = InRound(round);
  auto* f = e.mutable_job_finished();
  f->set_result(result);
  f->set_exit_code(exit_code);
  f->set_wall_time_s(wall_time_s);
  return e;
}

v1::JobEvent CallRefusedEvent(int round, const std::string& peer, const std::string& method,
                              int64_t refused) {
  v1::JobEvent e = InRound(round);
  e.mutable_call_refused()->set_peer(peer);
  e.mutable_call_refused()->set_method(method);
  e.mutable_call_refused()->set_refused(refused);
  return e;
}

v1::JobEvent StragglerEvent(int round, const NodePlace& node, const StragglerChange& c,
                            const StragglerSettings& settings, const std::string& policy) {
  v1::JobEvent e = InRound(round);
  v1::Straggler* s = c.detected ? e.mutable_straggler_detected() : e.mutable_straggler_cleared();
  s->set_node_id(node.node_id);
  s->set_node_rank(node.node_rank);
  s->set_host(node.host);
  s->set_rank(c.rank);
  for (int r : c.ranks) s->add_ranks(r);
  s->set_step_s(c.step_s);
  s->set_median_s(c.median_s);
  s->set_best_s(c.best_s);
  s->set_ratio(c.ratio);
  s->set_measure(c.gpu_clock     ? "gpu clock"
                 : c.cpu_stretch ? "cpu stretch"
                 : c.own_work    ? "own work"
                                 : "wall time per step");
  s->set_gpu_clock_max_mhz(c.gpu_clock_max_mhz);
  for (const std::string& why : GpuClockReasonNames(c.gpu_clock_reasons.value_or(0))) {
    s->add_gpu_clock_reasons(why);
  }
  s->set_threshold(settings.threshold);
  s->set_intervals(settings.persist);
  s->set_detected_at_s(c.since_s);
  s->set_waited_s(c.waited_s);
  s->set_reason(c.why);
  s->set_policy(policy);
  return e;
}

v1::JobEvent RoundStoppingEvent(int round, double detected_at_s) {
  v1::JobEvent e = InRound(round);
  e.mutable_round_stopping()->set_detected_at_s(detected_at_s);
  return e;
}

v1::JobEvent NodeDismissedEvent(int round, const std::string& event, int node_id,
                                const std::string& host, const std::string& reason) {
  v1::JobEvent e = InRound(round);
  v1::NodeDismissed* d = event == "node_excluded" ? e.mutable_node_excluded()
                         : event == "spare_lost"  ? e.mutable_spare_lost()
                                                  : e.mutable_node_dropped();
  d->set_node_id(node_id);
  d->set_host(host);
  d->set_reason(reason);
  return e;
}

v1::JobEvent ExclusionSkippedEvent(int round, int node_id, const std::string& reason) {
  v1::JobEvent e = InRound(round);
  e.mutable_exclusion_skipped()->set_node_id(node_id);
  e.mutable_exclusion_skipped()->set_reason(reason);
  return e;
}

v1::JobEvent RestartDecisionEvent(int round, const std::string& decision,
                                  const std::string& reason, int restarts_used,
                                  const Failure& root) {
  v1::JobEvent e = InRound(round);
  auto* d = e.mutable_restart_decision();
  d->set_decision(decision);
  d->set_reason(reason);
  d->set_restarts_used(restarts_used);
  *d->mutable_root_cause() = FailureRecordOf(root);
  return e;
}

v1::JobEvent SparePromotedEvent(int round, int node_id, const std::string& host) {
  v1::JobEvent e = InRound(round);
  e.mutable_spare_promoted()->set_node_id(node_id);
  e.mutable_spare_promoted()->set_host(host);
  return e;
}

v1::JobEvent RestartEvent(int round, const RestartPlanned& restart) {
  v1::JobEvent e = InRound(round);
  auto* r = e.mutable_restart();
  r->set_restarts_used(restart.restarts_used);
  r->set_max_restarts(restart.max_restarts);
  r->set_backoff_s(restart.backoff_s);
  for (int id : restart.node_ids) r->add_node_ids(id);
  r->set_reason(restart.reason);
  r->set_starts_in_s(restart.starts_in_s);
  r->set_waits_for_lost_workers(restart.waits_for_lost_workers);
  return e;
}

}  // namespace dlaunch
