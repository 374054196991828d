#include "launcher/trace/goodput_records.h"

#include <algorithm>
#include <iterator>

#include "launcher/trace/goodput_split.h"
#include "launcher/trace/journal_events.h"
#include "launcher/trace/json_lines.h"

namespace dlaunch {

namespace {

void Earliest(std::optional<int64_t>* at, int64_t us) {
  if (!*at || us < **at) *at = us;
}
void Latest(std::optional<int64_t>* at, int64_t us) {
  if (!*at || us > **at) *at = us;
}

void NoteFailure(GoodputRoundRecords* rec, int64_t t, const std::string& cls) {
  if (rec->failure_us && *rec->failure_us <= t) {
    if (rec->failure_class.empty()) rec->failure_class = cls;
    return;
  }
  rec->failure_us = t;
  if (!cls.empty() || rec->failure_class.empty()) rec->failure_class = cls;
}

void ReadEvents(const TraceInput& in, GoodputRecords& g) {
  for (const v1::JobEvent& e : in.events) {
    const std::optional<int64_t> t = ParseTimeMicros(e.time());
    if (!t) continue;
    if (e.has_job_started()) {
      if (!g.origin_us || *t < *g.origin_us) g.origin_us = *t;
      g.job_id = e.job_started().job_id();
    }
    g.end_us = std::max(g.end_us, *t);
    GoodputRoundRecords& rec = g.rounds[e.round()];
    Earliest(&rec.first_event_us, *t);
    switch (e.event_case()) {
      case v1::JobEvent::kRoundStarted: Earliest(&rec.started_us, *t); break;
      case v1::JobEvent::kWorkersStarted: Earliest(&rec.workers_started_us, *t); break;
      case v1::JobEvent::kWorkerStarted:
        Latest(&rec.last_worker_started_us, *t);
        Earliest(&rec.rank_started_us[e.worker_started().rank()], *t);
        break;
      case v1::JobEvent::kWorkerEnded: Latest(&rec.last_worker_ended_us, *t); break;
      case v1::JobEvent::kFailureDetected:
        NoteFailure(&rec, *t, e.failure_detected().failure().failure_class());
        break;
      case v1::JobEvent::kHangDetected: NoteFailure(&rec, *t, e.hang_detected().failure_class()); break;
      case v1::JobEvent::kWorkerFailed: NoteFailure(&rec, *t, "worker crash"); break;
      case v1::JobEvent::kNodeLost: NoteFailure(&rec, *t, "node lost"); break;
      case v1::JobEvent::kRoundStopping: NoteFailure(&rec, *t, ""); break;
      case v1::JobEvent::kStopRequested: Earliest(&rec.stop_us, *t); break;
      case v1::JobEvent::kStragglerDetected: ++rec.stragglers; break;
      case v1::JobEvent::kStragglerCleared:
        rec.straggler_waited_s += e.straggler_cleared().waited_s();
        break;
      case v1::JobEvent::kJobFinished:
        g.finished_us = *t;
        g.result = e.job_finished().result();
        g.finished = true;
        break;
      default: break;
    }
  }
  if (!g.origin_us && !in.events.empty()) {
    // No job_started (a journal cut short at its start): the first timed event stands for it.
    for (const v1::JobEvent& e : in.events) {
      if (auto t = ParseTimeMicros(e.time())) Earliest(&g.origin_us, *t);
    }
    if (g.origin_us) g.notes.push_back("the journal has no job_started: time 0 is its first event");
  }
  if (g.finished_us) g.end_us = *g.finished_us;
}

void ReadReports(const TraceInput& in, GoodputRecords& g) {
  // A version-1 journal's reports name no round: each belongs to the round it came in. (A
  // report of an older round than its time says is dropped by the launcher as stale.)
  std::map<int64_t, int> round_starts;
  for (const auto& [r, rec] : g.rounds) {
    if (r > 0) round_starts[rec.started_us.value_or(rec.first_event_us.value_or(0))] = r;
  }
  const auto round_at = [&](int64_t t) {
    auto it = round_starts.upper_bound(t);
    return it == round_starts.begin() ? 0 : std::prev(it)->second;
  };
  for (const v1::MetricLine& m : in.metrics) {
    if (!m.has_report()) continue;
    const v1::WorkerReport& r = m.report();
    const int64_t t = MetricMicros(m);
    if (t == 0) continue;
    if (!g.finished_us) g.end_us = std::max(g.end_us, t);
    // A line that moved its rank forward; a PHASE line alone carries no interval.
    if (r.step() <= 0 || (r.interval_s() <= 0 && r.samples() <= 0)) continue;
    GoodputProgress p;
    p.end_us = t;
    p.begin_us = t - GoodputMicros(r.interval_s());
    p.step = r.step();
    p.checkpoint_step = r.checkpoint_step();
    p.comm_wait_s = r.timings().comm_wait_ms() / 1000.0;
    if (r.checkpoint_step() > 0) g.checkpoint_steps.insert(r.checkpoint_step());
    g.rounds[std::max(m.round(), round_at(t))].ranks[r.rank()].push_back(p);
  }
  for (auto& [round, rec] : g.rounds) {
    for (auto& [rank, list] : rec.ranks) {
      std::stable_sort(list.begin(), list.end(),
                       [](const GoodputProgress& a, const GoodputProgress& b) { return a.end_us < b.end_us; });
    }
  }
}

void ReadPauses(const TraceInput& in, GoodputRecords& g) {
  for (const auto& [rank, trace] : in.rank_steps) {
    for (const StepRow& row : trace.rows) {
      if (row.span.empty() || row.dur_us <= 0) continue;
      const bool checkpoint = row.span == "checkpoint";
      if (!checkpoint && row.span != "evaluate") continue;
      g.pauses.push_back({rank, row.ts_us, row.ts_us + row.dur_us, checkpoint});
      if (checkpoint) g.checkpoint_costs.push_back(GoodputSeconds(row.dur_us));
      g.traced = true;
    }
  }
}

// The phases the ranks reported (the Python package's phase()): their checkpoints and
// evaluations count as the step trace's do; the others split the rounds' start-up.
void ReadPhases(const TraceInput& in, GoodputRecords& g) {
  std::vector<int64_t> round_starts;
  for (const auto& [r, rec] : g.rounds) {
    if (r > 0) round_starts.push_back(rec.started_us.value_or(rec.first_event_us.value_or(g.end_us)));
  }
  std::sort(round_starts.begin(), round_starts.end());
  g.phases = ReadRankPhases(in.metrics, round_starts, g.end_us);
  for (const RankPhase& p : g.phases) {
    if (p.kind != PhaseKind::kCheckpoint && p.kind != PhaseKind::kEvaluation) continue;
    const bool checkpoint = p.kind == PhaseKind::kCheckpoint;
    g.pauses.push_back({p.rank, p.begin_us, p.end_us, checkpoint});
    if (checkpoint) {
      g.checkpoint_costs.push_back(GoodputSeconds(p.end_us - p.begin_us));
      g.checkpoint_phases = true;
    } else {
      g.evaluation_phases = true;
    }
  }
}

}  // namespace

GoodputRecords ReadGoodputRecords(const TraceInput& in) {
  GoodputRecords r;
  ReadEvents(in, r);
  ReadReports(in, r);
  ReadPauses(in, r);
  ReadPhases(in, r);
  return r;
}

}  // namespace dlaunch
