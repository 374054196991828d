#include "launcher/job/straggler_score.h"

#include <algorithm>
#include <set>

namespace dlaunch {
namespace {

// The step's phases that are the rank's own work. comm_wait_ms is waiting for the others and is
// left out; backward may hold a wait too (DDP's overlapped all-reduce), which dilutes the ratio
// but cannot hide the slowest rank: its forward, data and optimizer times are its own.
double WorkSeconds(const v1::PhaseTimings& t) {
  return (t.data_ms() + t.forward_ms() + t.backward_ms() + t.optimizer_ms()) / 1000.0;
}

// A report that says the rank was doing something other than steps during its interval.
bool OutsideTraining(const v1::WorkerReport& r) {
  if (r.kind() == v1::WorkerReport::PHASE || r.kind() == v1::WorkerReport::EPOCH) return true;
  if (r.phase() != v1::WorkerReport::PHASE_UNSPECIFIED && r.phase() != v1::WorkerReport::TRAINING) {
    return true;
  }
  return r.has_phase_log() && r.phase_log().events_size() > 0;
}

// A rank that ran less than this in an interval (it slept: it waited for its peers, or for
// input) is not scored by its CPU for it: a few wake-ups' delays would make its stretch.
constexpr double kMinCpuS = 0.005;

double Median(std::vector<double> v) {
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<long>(mid), v.end());
  if (v.size() % 2 == 1) return v[mid];
  const double upper = v[mid];
  return (upper + *std::max_element(v.begin(), v.begin() + static_cast<long>(mid))) / 2;
}

}  // namespace

void StragglerScore::StartRound(double now_s) {
  ranks_.clear();
  scores_.clear();
  named_.clear();
  any_reports_ = false;
  evaluated_at_s_ = now_s;
}

void StragglerScore::OnReport(int rank, int node, const v1::WorkerReport& r, double now_s) {
  if (!settings_.enabled) return;
  RankState& s = ranks_[rank];
  s.node = node;
  any_reports_ = true;
  if (OutsideTraining(r)) s.pending.paused = true;
  if (r.kind() == v1::WorkerReport::PHASE) return;   // no step, no interval
  const long step = static_cast<long>(r.step());
  if (s.last_step < 0) {
    // Its first report's interval holds the rank's start-up: only later ones are steps.
    s.first_step = s.last_step = step;
    s.last_report_s = now_s;
    return;
  }
  if (step <= s.last_step) return;   // no new step (or an old report arriving late)
  const long steps = step - s.last_step;
  const double wall = r.interval_s() > 0 ? r.interval_s() : now_s - s.last_report_s;
  s.last_step = step;
  s.last_report_s = now_s;
  if (step - s.first_step <= settings_.warmup_steps) return;
  s.pending.steps += steps;
  s.pending.wall_s += wall;
  const double work = WorkSeconds(r.timings());
  s.pending.work_s += work;
  s.pending.timed = s.pending.timed && work > 0;
}

void StragglerScore::OnCpuSample(int rank, int node, double cpu_s, double run_delay_s,
                                  double now_s) {
  (void)now_s;
  if (!settings_.enabled) return;
  RankState& s = ranks_[rank];
  s.node = node;
  // The first counters, or lower ones (a thread ended and took its share along): a new base.
  if (s.cpu_seen && cpu_s >= s.cpu_s && run_delay_s >= s.delay_s) {
    s.cpu_pending_s += cpu_s - s.cpu_s;
    s.delay_pending_s += run_delay_s - s.delay_s;
    s.cpu_grew = true;
  }
  s.cpu_seen = true;
  s.cpu_s = cpu_s;
  s.delay_s = run_delay_s;
}

std::vector<StragglerScore::Sample> StragglerScore::TakeCpuSamples(double interval_s) {
  std::vector<Sample> out;
  for (auto& [rank, s] : ranks_) {
    if (!s.cpu_grew) continue;  // only its base so far, or nothing new
    const double cpu = s.cpu_pending_s, delay = s.delay_pending_s;
    s.cpu_pending_s = s.delay_pending_s = 0;
    s.cpu_grew = false;
    if (s.cpu_intervals++ == 0 || cpu < kMinCpuS) continue;  // its start-up; or it slept
    out.push_back({rank, (cpu + delay) / cpu, interval_s});
  }
  return out;
}

void StragglerScore::OnRankEnded(int rank) {
  ranks_.erase(rank);
  scores_.erase(rank);
}

std::vector<StragglerScore::Sample> StragglerScore::TakeSamples() {
  // Own work only when every sampled rank timed its steps: a median of work and wall mixed
  // would name the ranks that time nothing.
  bool all_timed = true;
  for (const auto& [rank, s] : ranks_) {
    if (s.pending.steps > 0 && !s.pending.paused) all_timed = all_timed && s.pending.timed;
  }
  std::vector<Sample> out;
  for (auto& [rank, s] : ranks_) {
    if (s.pending.paused) {
      s.pending = Pending{};   // its interval held a phase: not scored, counts kept
      continue;
    }
    if (s.pending.steps == 0) continue;   // a step longer than the interval: keep adding
    const double per_step = (all_timed ? s.pending.work_s : s.pending.wall_s) / s.pending.steps;
    out.push_back({rank, per_step, s.pending.wall_s});
    s.pending = Pending{};
  }
  own_work_ = all_timed;
  return out;
}

bool StragglerScore::LocalRankMedians(std::vector<Sample>& samples, int min_group,
                                      bool every_group) const {
  std::map<int, std::vector<int>> node_ranks;  // ranks_ is ordered: each node's in rank order
  for (const auto& [rank, s] : ranks_) node_ranks[s.node].push_back(rank);
  std::map<int, int> local;
  for (const auto& [node, ranks] : node_ranks) {
    for (size_t i = 0; i < ranks.size(); ++i) local[ranks[i]] = static_cast<int>(i);
  }
  std::map<int, std::vector<double>> groups;
  for (const Sample& x : samples) groups[local[x.rank]].push_back(x.step_s);
  if (every_group) {
    for (const auto& [l, g] : groups) {
      if (static_cast<int>(g.size()) < min_group) return false;
    }
  }
  bool any = false;
  for (Sample& x : samples) {
    const std::vector<double>& g = groups[local[x.rank]];
    x.median_s = static_cast<int>(g.size()) >= min_group ? Median(g) : 0;
    any = any || x.median_s > 0;
  }
  return any;
}

void StragglerScore::Score(const std::vector<Sample>& samples) {
  const double clear_below = settings_.ClearBelow();
  for (const Sample& x : samples) {
    const double median = x.median_s;
    if (median <= 0) continue;  // nothing to compare it with
    RankState& s = ranks_[x.rank];
    RankStragglerScore& score = scores_[x.rank];
    score.node = s.node;
    score.step_s = x.step_s;
    score.median_s = median;
    score.best_s = score.best_s > 0 ? std::min(score.best_s, x.step_s) : x.step_s;
    score.ratio = median > 0 ? x.step_s / median : 0;
    if (score.ratio >= settings_.threshold) {
      ++s.slow_in_a_row;
      s.fast_in_a_row = 0;
    } else {
      s.slow_in_a_row = 0;
      s.fast_in_a_row = score.ratio < clear_below ? s.fast_in_a_row + 1 : 0;
    }
    if (!s.named && s.slow_in_a_row >= settings_.persist) s.named = true;
    if (s.named && s.fast_in_a_row >= settings_.persist) s.named = false;
    score.named = s.named;
  }
  // The job waits for its slowest named rank: its steps beyond the median's pace are the time
  // every other rank spent waiting, counted once, on that rank's node.
  const Sample* slowest = nullptr;
  for (const Sample& x : samples) {
    if (ranks_[x.rank].named && (!slowest || x.step_s > slowest->step_s)) slowest = &x;
  }
  if (slowest && slowest->median_s > 0) {
    auto it = named_.find(ranks_[slowest->rank].node);
    if (it != named_.end()) {
      it->second.waited_s += slowest->wall_s * (1 - slowest->median_s / slowest->step_s);
    }
  }
}

std::vector<StragglerChange> StragglerScore::Evaluate(double now_s) {
  const double interval_s = now_s - evaluated_at_s_;
  evaluated_at_s_ = now_s;
  cpu_stretch_ = !any_reports_;
  std::vector<Sample> samples = cpu_stretch_ ? TakeCpuSamples(interval_s) : TakeSamples();
  if (static_cast<int>(samples.size()) < std::max(settings_.min_ranks, 2)) return {};
  if (cpu_stretch_) {
    if (!LocalRankMedians(samples, std::max(settings_.min_ranks, 2), false)) return {};
  } else if (!LocalRankMedians(samples, kLocalRankGroup, true)) {
    std::vector<double> times;
    times.reserve(samples.size());
    for (const Sample& x : samples) times.push_back(x.step_s);
    const double median = Median(std::move(times));
    for (Sample& x : samples) x.median_s = median;
  }
  Score(samples);
  return NodeChanges(now_s);
}

StragglerChange StragglerScore::FiguresOf(int node, bool detected) const {
  StragglerChange c;
  c.detected = detected;
  c.node = node;
  c.own_work = own_work_ && !cpu_stretch_;
  c.cpu_stretch = cpu_stretch_;
  for (const auto& [rank, score] : scores_) {
    if (score.node != node || !ranks_.at(rank).named) continue;
    c.ranks.push_back(rank);
    if (score.ratio > c.ratio) {
      c.rank = rank;
      c.ratio = score.ratio;
      c.step_s = score.step_s;
      c.median_s = score.median_s;
      c.best_s = score.best_s;
    }
  }
  return c;
}

std::vector<StragglerChange> StragglerScore::NodeChanges(double now_s) {
  std::set<int> nodes_now;
  for (const auto& [rank, s] : ranks_) {
    if (s.named) nodes_now.insert(s.node);
  }
  std::vector<StragglerChange> out;
  for (auto it = named_.begin(); it != named_.end();) {
    if (nodes_now.count(it->first)) {
      ++it;
      continue;
    }
    StragglerChange c = it->second;
    c.detected = false;
    c.why = "its ranks ended";
    // The figures it clears with: its slowest rank's now.
    for (int rank : c.ranks) {
      auto score = scores_.find(rank);
      if (score == scores_.end()) continue;
      c.why = "back to the median's pace";
      c.step_s = score->second.step_s;
      c.median_s = score->second.median_s;
      c.ratio = score->second.ratio;
    }
    out.push_back(std::move(c));
    it = named_.erase(it);
  }
  for (int node : nodes_now) {
    if (named_.count(node)) continue;
    StragglerChange c = FiguresOf(node, true);
    c.since_s = now_s;
    named_[node] = c;
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<StragglerChange> StragglerScore::EndRound(double now_s) {
  std::vector<StragglerChange> out;
  for (auto& [node, named] : named_) {
    StragglerChange c = named;
    c.detected = false;
    c.why = "the round ended";
    out.push_back(std::move(c));
  }
  StartRound(now_s);
  return out;
}

std::map<int, double> StragglerScore::NodeScores() const {
  std::map<int, double> out;
  for (const auto& [rank, score] : scores_) {
    double& v = out[score.node];
    v = std::max(v, score.ratio);
  }
  return out;
}

}  // namespace dlaunch
