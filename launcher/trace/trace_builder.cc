#include "launcher/trace/trace_builder.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/json_line.h"
#include "launcher/jobdir/journal.h"
#include "launcher/trace/goodput_view.h"
#include "launcher/trace/journal_events.h"
#include "launcher/trace/json_lines.h"
#include "launcher/trace/trace_layout.h"

namespace dlaunch {

namespace {
// Above every node's pid, so rank threads never share a tid with a node's own thread.
constexpr int kRankTidBase = 1 << 24;
// The tracks of a rank on the second and later nodes it ran on (after a restart moved it):
// Perfetto takes a tid to name one thread across the whole trace, so each gets its own.
constexpr int kMovedRankTidBase = 1 << 29;
}  // namespace

int NodePid(int node) { return 2 + node; }
int NodeTid(int node) { return NodePid(node); }
int RankTid(int rank) { return kRankTidBase + 2 * rank; }
int ReportTid(int rank) { return kRankTidBase + 2 * rank + 1; }

namespace {

// Walks the journal once, turning events into spans and instants on their tracks.
class Builder {
 public:
  // One track per (rank, node) the rank ran on: RankTid on its first node (node 0 when none is
  // known), fresh tids on the nodes a restart moved it to.
  Builder(const TraceInput& in, TraceParts& out) : in_(in), out_(out), layout_(ReadTraceLayout(in)) {
    int moved = 0;
    for (const auto& [rank, placements] : layout_.rank_nodes) {
      rank_tracks_[{rank, layout_.NodeAt(rank, std::numeric_limits<int64_t>::min())}] =
          RankTid(rank);
      for (const auto& [t, node] : placements) {
        if (rank_tracks_.emplace(std::pair(rank, node), kMovedRankTidBase + 2 * moved).second)
          ++moved;
      }
    }
  }

  void Run() {
    out_.origin_unix_us = Origin();
    NameTracks();
    for (const v1::JobEvent& e : in_.events) OnEvent(e);
    AddReports();
    AddWorkerSteps();
    CloseOpenSpans();  // after everything that moves the last time seen
    CoverSteps();
    for (TraceEvent& p : lifetimes_) out_.fixed.push_back(std::move(p));
    for (const auto& [file, bad] : bad_lines_) {
      if (bad > 0)
        out_.notes.push_back(absl::StrCat(file, ": ", bad, " unreadable line(s) skipped"));
    }
  }

 private:
  struct OpenSpan {
    int64_t begin_us = 0;
    std::string args;
    int node = 0;  // a worker's
  };

  std::optional<int64_t> UnixMicros(const v1::JobEvent& e) const {
    return ParseTimeMicros(e.time());
  }
  int64_t Ts(int64_t unix_us) {
    const int64_t ts = unix_us - out_.origin_unix_us;
    last_us_ = std::max(last_us_, ts);
    return ts;
  }

  // The job's start, else the earliest time any input has.
  int64_t Origin() const {
    int64_t origin = std::numeric_limits<int64_t>::max();
    for (const v1::JobEvent& e : in_.events) {
      std::optional<int64_t> t = UnixMicros(e);
      if (!t) continue;
      if (e.has_job_started()) return *t;
      origin = std::min(origin, *t);
    }
    for (const v1::MetricLine& m : in_.metrics) {
      origin = std::min(origin, MetricMicros(m) - static_cast<int64_t>(m.report().interval_s() * 1e6));
    }
    for (const auto& [rank, trace] : in_.rank_steps) {
      for (const StepRow& s : trace.rows) origin = std::min(origin, s.ts_us);
    }
    return origin == std::numeric_limits<int64_t>::max() ? 0 : origin;
  }

  void NameTracks() {
    out_.fixed.push_back(ProcessName(kLauncherPid, "launcher"));
    out_.fixed.push_back(ProcessSortIndex(kLauncherPid, 0));
    out_.fixed.push_back(ThreadName(kLauncherPid, kLauncherTid, "launcher"));
    for (const auto& [node, host] : layout_.node_hosts) {
      out_.fixed.push_back(
          ProcessName(NodePid(node), host.empty() ? absl::StrCat("node ", node)
                                                  : absl::StrCat("node ", node, " (", host, ")")));
      out_.fixed.push_back(ProcessSortIndex(NodePid(node), 1 + node));
      out_.fixed.push_back(
          ThreadName(NodePid(node), NodeTid(node), absl::StrCat("node ", node, " events")));
      out_.fixed.push_back(ThreadSortIndex(NodePid(node), NodeTid(node), 0));
    }
    for (const auto& [rank_node, tid] : rank_tracks_) {
      const auto [rank, node] = rank_node;
      out_.fixed.push_back(ThreadName(NodePid(node), tid, absl::StrCat("rank ", rank)));
      out_.fixed.push_back(ThreadSortIndex(NodePid(node), tid, RankTid(rank)));
      out_.fixed.push_back(
          ThreadName(NodePid(node), tid + 1, absl::StrCat("rank ", rank, " reports")));
      out_.fixed.push_back(ThreadSortIndex(NodePid(node), tid + 1, ReportTid(rank)));
    }
  }

  // The thread of rank `rank` on node `node` (its reports: the next tid): RankTid on the first
  // node it ran on.
  int RankTrack(int rank, int node) const {
    auto it = rank_tracks_.find({rank, node});
    return it == rank_tracks_.end() ? RankTid(rank) : it->second;
  }

  // The node `rank` is on at `place`: the node the record names, else where the rank was then.
  int NodeOfRank(int rank, const EventPlace& place, int64_t unix_us) const {
    if (place.node_id >= 0 && layout_.node_hosts.count(place.node_id)) return place.node_id;
    return layout_.NodeAt(rank, unix_us);
  }

  // The track an event is about: a rank's, a node's, else the launcher's. `unix_us`: when it
  // happened (a failure record has no time of its own).
  std::pair<int, int> TrackOf(const EventPlace& p, int64_t unix_us) const {
    if (p.rank >= 0 && layout_.rank_nodes.count(p.rank)) {
      const int node = NodeOfRank(p.rank, p, unix_us);
      return {NodePid(node), RankTrack(p.rank, node)};
    }
    if (p.node_id >= 0 && layout_.node_hosts.count(p.node_id))
      return {NodePid(p.node_id), NodeTid(p.node_id)};
    return {kLauncherPid, kLauncherTid};
  }

  void OnEvent(const v1::JobEvent& e) {
    std::optional<int64_t> unix_us = UnixMicros(e);
    if (!unix_us) return;
    const int64_t ts = Ts(*unix_us);
    const EventPlace place = PlaceOf(e);
    switch (e.event_case()) {
      case v1::JobEvent::kJobStarted:
        job_ = OpenSpan{ts, EventArgs(e)};
        rendezvous_begin_ = ts;
        return;
      case v1::JobEvent::kNodeJoined: {
        if (!rendezvous_begin_) rendezvous_begin_ = ts;
        const std::string& host = e.node_joined().host();
        std::optional<int> node = layout_.UniqueNode(host);
        Fixed(Instant(absl::StrCat("node joined: ", host), "node",
                      node ? NodePid(*node) : kLauncherPid, node ? NodeTid(*node) : kLauncherTid,
                      ts, EventArgs(e)));
        return;
      }
      case v1::JobEvent::kRendezvousClosed:
        Fixed(Span("rendezvous", "launcher", kLauncherPid, kLauncherTid,
                   rendezvous_begin_.value_or(ts), ts, EventArgs(e)));
        rendezvous_begin_.reset();
        return;
      case v1::JobEvent::kWorkerStarted:
        workers_[place.rank] = OpenSpan{ts, EventArgs(e), NodeOfRank(place.rank, place, *unix_us)};
        return;
      case v1::JobEvent::kWorkerEnded:
        EndWorker(e, place, ts, *unix_us);
        return;
      case v1::JobEvent::kWorkersStarted:
        Fixed(Instant("all workers started", "launcher", kLauncherPid, kLauncherTid, ts,
                      EventArgs(e)));
        return;
      case v1::JobEvent::kFailureDetected:
      case v1::JobEvent::kRootCause:
        OnFailure(e, ts, *unix_us);
        return;
      case v1::JobEvent::kWorkerFailed:
      case v1::JobEvent::kHangDetected:
      case v1::JobEvent::kNodeLost: {
        auto [pid, tid] = TrackOf(place, *unix_us);
        std::string label =
            e.has_worker_failed() ? "worker failed"
            : e.has_node_lost()   ? "node lost"
                                  : absl::StrCat("hang detected (", e.hang_detected().failure_class(), ")");
        Fixed(Instant(label, "launcher", pid, tid, ts, EventArgs(e)));
        return;
      }
      case v1::JobEvent::kStopRequested:
        if (!stop_) stop_ = OpenSpan{ts, EventArgs(e)};
        return;
      case v1::JobEvent::kStragglerDetected:
        stragglers_.emplace(place.node_id, OpenSpan{ts, EventArgs(e), place.node_id});
        return;
      case v1::JobEvent::kStragglerCleared:
        EndStraggler(e.straggler_cleared(), ts, EventArgs(e));
        return;
      case v1::JobEvent::kJobFinished:
        FinishJob(e, ts);
        return;
      default: {
        auto [pid, tid] = TrackOf(place, *unix_us);
        out_.instants.push_back(Instant(EventName(e), "launcher", pid, tid, ts, EventArgs(e)));
      }
    }
  }

  // A node named a straggler: a span on its own track from named to cleared, its figures in the
  // args of both ends (docs/stragglers.md).
  void EndStraggler(const v1::Straggler& s, int64_t ts, const std::string& args) {
    auto it = stragglers_.find(s.node_id());
    if (it == stragglers_.end()) return;
    Fixed(Span(absl::StrFormat("straggler: rank %d at %.2fx the median", s.rank(), s.ratio()),
               "straggler", NodePid(s.node_id()), NodeTid(s.node_id()), it->second.begin_us, ts,
               absl::StrCat("{\"named\":", it->second.args, ",\"cleared\":", args, "}")));
    stragglers_.erase(it);
  }

  void FinishJob(const v1::JobEvent& e, int64_t ts) {
    const std::string& result = e.job_finished().result();
    Fixed(Instant(absl::StrCat("job finished: ", result), "launcher", kLauncherPid, kLauncherTid,
                  ts, EventArgs(e)));
    if (stop_)
      Fixed(Span("stop", "launcher", kLauncherPid, kLauncherTid, stop_->begin_us, ts, stop_->args));
    if (job_)
      Fixed(Span(absl::StrCat("job ", result), "launcher", kLauncherPid, kLauncherTid,
                 job_->begin_us, ts, job_->args));
    stop_.reset();
    job_.reset();
  }

  void OnFailure(const v1::JobEvent& e, int64_t ts, int64_t unix_us) {
    const v1::FailureRecord& f =
        e.has_root_cause() ? e.root_cause().failure() : e.failure_detected().failure();
    if (e.has_root_cause()) {
      // Global scope: a line across every track at the moment the cause was named.
      TraceEvent root = Instant(absl::StrCat("root cause: ", f.description()), "launcher",
                                kLauncherPid, kLauncherTid, ts, EventArgs(e));
      root.scope = 'g';
      Fixed(std::move(root));
      return;
    }
    auto [pid, tid] = TrackOf(PlaceOf(f), unix_us);
    Fixed(Instant(absl::StrCat("failure: ", f.description()), "launcher", pid, tid, ts,
                  EventArgs(e)));
  }

  void EndWorker(const v1::JobEvent& e, const EventPlace& place, int64_t ts, int64_t unix_us) {
    const v1::WorkerEnded& w = e.worker_ended();
    const int rank = w.rank();
    auto it = workers_.find(rank);
    const int64_t begin = it == workers_.end() ? ts : it->second.begin_us;
    const int node = it == workers_.end() ? NodeOfRank(rank, place, unix_us) : it->second.node;
    std::string name = absl::StrCat(
        "rank ", rank, ": ", w.state().empty() ? "ended" : w.state(),
        w.signal() != 0 ? absl::StrCat(", signal ", w.signal())
                        : absl::StrCat(", exit code ", w.exit_code()));
    lifetimes_.push_back(Span(std::move(name), "worker", NodePid(node), RankTrack(rank, node),
                              begin, ts, EventArgs(e)));
    lifetime_ranks_.push_back(rank);
    if (it != workers_.end()) workers_.erase(it);
  }

  // A journal cut short (the launcher was killed) leaves spans open: they end at the last time
  // seen and say so.
  void CloseOpenSpans() {
    const std::string unfinished = JsonLine().Add("unfinished", true).str();
    for (const auto& [rank, w] : workers_) {
      lifetimes_.push_back(Span(absl::StrCat("rank ", rank, ": no end recorded"), "worker",
                                NodePid(w.node), RankTrack(rank, w.node), w.begin_us,
                                std::max(w.begin_us, last_us_), unfinished));
      lifetime_ranks_.push_back(rank);
    }
    if (rendezvous_begin_ && job_) {
      Fixed(Span("rendezvous (not closed)", "launcher", kLauncherPid, kLauncherTid,
                 *rendezvous_begin_, last_us_, unfinished));
    }
    if (stop_)
      Fixed(Span("stop", "launcher", kLauncherPid, kLauncherTid, stop_->begin_us, last_us_,
                 unfinished));
    for (const auto& [node, s] : stragglers_) {
      Fixed(Span("straggler (not cleared)", "straggler", NodePid(node), NodeTid(node), s.begin_us,
                 std::max(s.begin_us, last_us_), s.args));
    }
    if (job_)
      Fixed(Span("job (no end recorded)", "launcher", kLauncherPid, kLauncherTid, job_->begin_us,
                 last_us_, unfinished));
  }

  // A report covers the interval_s before the worker made it; metrics.jsonl has the time the
  // launcher received it, a heartbeat later, and one heartbeat may carry several. Walking back
  // from the last, each span ends at its receipt or where the next begins, whichever is first:
  // reports that came together line up back to back, and no two overlap.
  void AddReports() {
    std::map<int, std::vector<const v1::MetricLine*>> by_rank;
    for (const v1::MetricLine& m : in_.metrics) by_rank[m.report().rank()].push_back(&m);
    for (const auto& [rank, rows] : by_rank) {
      std::vector<ReportSpan> spans(rows.size());
      int64_t next_begin = std::numeric_limits<int64_t>::max();
      for (size_t i = rows.size(); i-- > 0;) {
        const v1::WorkerReport& m = rows[i]->report();
        const int64_t unix_us = MetricMicros(*rows[i]);
        ReportSpan& s = spans[i];
        const int node = rows[i]->node_id() >= 0 ? rows[i]->node_id() : layout_.NodeAt(rank, unix_us);
        s.pid = NodePid(node);
        s.tid = RankTrack(rank, node) + 1;
        s.end_us = std::min(Ts(unix_us), next_begin);
        s.begin_us = s.end_us - static_cast<int64_t>(m.interval_s() * 1e6);
        s.last_step = m.step();
        s.samples = static_cast<double>(m.samples());
        s.loss = m.loss();
        next_begin = s.begin_us;
      }
      for (size_t i = 0; i < spans.size(); ++i) {
        // The steps since the previous report; a restarted worker counts from its own start.
        const bool continues = i > 0 && spans[i - 1].last_step < spans[i].last_step;
        spans[i].first_step = continues ? spans[i - 1].last_step + 1 : 0;
      }
      out_.reports[rank] = std::move(spans);
    }
  }

  // trace/rank-N.jsonl: a header saying how steps were sampled, then one line per recorded step
  // (its phases, back to back) or other span (a checkpoint, an evaluation).
  void AddWorkerSteps() {
    std::set<std::string> sampling;
    for (const auto& [rank, trace] : in_.rank_steps) {
      bad_lines_[absl::StrCat("trace/rank-", rank, ".jsonl")] += trace.bad_lines;
      sampling.insert(trace.sampling);
      std::vector<StepSpan>& spans = out_.steps[rank];
      for (const StepRow& r : trace.rows) {
        StepSpan s;
        const int node = layout_.NodeAt(rank, r.ts_us);
        s.pid = NodePid(node);
        s.tid = RankTrack(rank, node);
        s.begin_us = Ts(r.ts_us);
        const int64_t dur =
            r.span.empty() ? r.data_us + r.forward_us + r.backward_us + r.optimizer_us : r.dur_us;
        s.end_us = Ts(r.ts_us + dur);
        s.row = r;
        spans.push_back(std::move(s));
      }
    }
    for (const std::string& s : sampling) {
      if (!s.empty()) out_.notes.push_back(absl::StrCat("worker step traces: ", s));
    }
  }

  // A rank's process span is stamped by the launcher; its steps by the worker's own clock.
  // Each process span is widened to hold the steps inside its run, so the track nests.
  void CoverSteps() {
    for (auto& [rank, spans] : out_.steps) {
      std::vector<size_t> mine;
      for (size_t i = 0; i < lifetimes_.size(); ++i) {
        if (lifetime_ranks_[i] == rank) mine.push_back(i);
      }
      if (mine.empty()) continue;
      std::sort(mine.begin(), mine.end(),
                [&](size_t a, size_t b) { return lifetimes_[a].ts_us < lifetimes_[b].ts_us; });
      for (const StepSpan& s : spans) {
        // Only the process spans on the step's own track can hold it.
        std::vector<size_t> here;
        for (size_t i : mine) {
          if (lifetimes_[i].pid == s.pid) here.push_back(i);
        }
        if (here.empty()) continue;
        const int64_t begin = s.begin_us;
        const int64_t end = s.end_us;
        size_t pick = here.front();
        for (size_t i : here) {
          if (lifetimes_[i].ts_us <= begin) pick = i;
        }
        TraceEvent& life = lifetimes_[pick];
        const int64_t life_end = std::max(life.ts_us + life.dur_us, end);
        life.ts_us = std::min(life.ts_us, begin);
        life.dur_us = life_end - life.ts_us;
      }
    }
  }

  void Fixed(TraceEvent e) { out_.fixed.push_back(std::move(e)); }

  const TraceInput& in_;
  TraceParts& out_;
  const TraceLayout layout_;
  int64_t last_us_ = 0;
  std::optional<OpenSpan> job_, stop_;
  std::optional<int64_t> rendezvous_begin_;
  std::map<int, OpenSpan> workers_;
  std::map<int, OpenSpan> stragglers_;   // nodes named and not yet cleared, by node id
  std::vector<TraceEvent> lifetimes_;
  std::vector<int> lifetime_ranks_;  // the rank of each of lifetimes_
  std::map<std::pair<int, int>, int> rank_tracks_;  // (rank, node) -> tid
  std::map<std::string, int> bad_lines_;
};

}  // namespace

std::vector<TraceEvent> StepEvents(const StepSpan& s) {
  const StepRow& r = s.row;
  if (!r.span.empty()) {
    return {Span(r.span, "phase", s.pid, s.tid, s.begin_us, s.end_us,
                 JsonLine().Add("step", r.step).str())};
  }
  std::vector<TraceEvent> out;
  out.push_back(Span(absl::StrCat("step ", r.step), "step", s.pid, s.tid, s.begin_us, s.end_us,
                     JsonLine().Add("step", r.step).Add("stride", r.stride).str()));
  int64_t at = s.begin_us;
  for (const auto& [label, dur] : {std::pair<const char*, int64_t>{"data", r.data_us},
                                   {"forward", r.forward_us},
                                   {"backward + allreduce", r.backward_us},
                                   {"optimizer", r.optimizer_us}}) {
    out.push_back(Span(label, "phase", s.pid, s.tid, at, at + dur));
    at += dur;
  }
  return out;
}

TraceInput MakeTraceInput(EventJournal events, MetricJournal metrics) {
  TraceInput in;
  in.events = std::move(events.events);
  in.events_bad_lines = events.bad_lines;
  in.metrics = std::move(metrics.metrics);
  in.metrics_bad_lines = metrics.bad_lines;
  const auto untimed = [](const v1::MetricLine& m) { return !ParseTimeMicros(m.time()); };
  const auto kept = std::remove_if(in.metrics.begin(), in.metrics.end(), untimed);
  in.metrics_bad_lines += static_cast<int>(in.metrics.end() - kept);
  in.metrics.erase(kept, in.metrics.end());
  return in;
}

TraceParts BuildTraceParts(const TraceInput& input) {
  return BuildTraceParts(input, ComputeGoodput(input));
}

TraceParts BuildTraceParts(const TraceInput& input, const v1::GoodputAccount& goodput) {
  TraceParts parts;
  parts.job_id = [&] {
    for (const v1::JobEvent& e : input.events) {
      if (e.has_job_started()) return e.job_started().job_id();
    }
    return std::string();
  }();
  Builder(input, parts).Run();
  for (TraceEvent& e : GoodputTraceEvents(goodput, parts.origin_unix_us)) {
    parts.fixed.push_back(std::move(e));
  }
  if (input.events_bad_lines > 0) {
    parts.notes.push_back(
        absl::StrCat("events.jsonl: ", input.events_bad_lines, " unreadable line(s) skipped"));
  }
  if (input.metrics_bad_lines > 0) {
    parts.notes.push_back(
        absl::StrCat("metrics.jsonl: ", input.metrics_bad_lines, " unreadable line(s) skipped"));
  }
  return parts;
}

}  // namespace dlaunch
