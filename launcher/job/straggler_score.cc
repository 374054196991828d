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

// A GPU sample counts for the "gpu clock" only while the GPU was busy at least this share of
// NVML's sample period. An idle GPU lowers its clock to save power: a low clock then says
// nothing of how fast it computes (a rank between steps, waiting for input, or in a phase that
// leaves its GPU idle). A GPU that runs kernels, its own work or NCCL's waiting ones, runs at
// its full clock unless something holds it down: heat, its power cap, a hardware slowdown.
constexpr double kMinGpuBusyPct = 50;

double Median(std::vector<double> v) {
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<long>(mid), v.end());
  if (v.size() % 2 == 1) return v[mid];
  const double upper = v[mid];
  return (upper + *std::max_element(v.begin(), v.begin() + static_cast<long>(mid))) / 2;
}

}  // namespace

std::vector<std::string> GpuClockReasonNames(uint64_t reasons) {
  // nvmlClocksEventReason* (nvml.h); 0x1 (idle) and 0x100 (display clock) say nothing of a
  // busy GPU held down.
  static const std::pair<uint64_t, const char*> kNames[] = {
      {0x4, "power cap"},   {0x8, "hw slowdown"}, {0x10, "sync boost"},
      {0x20, "sw thermal"}, {0x40, "hw thermal"}, {0x80, "power brake"},
      {0x2, "applications clocks"}};
  std::vector<std::string> out;
  for (const auto& [bit, name] : kNames) {
    if (reasons & bit) out.push_back(name);
  }
  return out;
}

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
    out.push_back({rank, (cpu + delay) / cpu, interval_s, 0, StragglerMeasure::kCpuStretch, cpu});
  }
  return out;
}

void StragglerScore::OnGpuSample(int rank, int node, const std::vector<RankGpuSample>& gpus,
                                 double now_s) {
  (void)now_s;
  if (!settings_.enabled) return;
  // The rank runs at the pace of its slowest busy GPU: that one's ns per cycle.
  const RankGpuSample* slowest = nullptr;
  for (const RankGpuSample& g : gpus) {
    if (g.sm_clock_mhz <= 0 || g.utilization_pct < kMinGpuBusyPct) continue;
    if (!slowest || g.sm_clock_mhz < slowest->sm_clock_mhz) slowest = &g;
  }
  if (!slowest) return;
  RankState& s = ranks_[rank];
  s.node = node;
  s.gpu_ns_pending += 1000 / slowest->sm_clock_mhz;
  ++s.gpu_busy_samples;
  if (slowest->clock_event_reasons) {
    s.gpu_reasons_pending = s.gpu_reasons_pending.value_or(0) | *slowest->clock_event_reasons;
  }
  if (slowest->sm_clock_max_mhz > 0) s.gpu_max_mhz = slowest->sm_clock_max_mhz;
}

std::vector<StragglerScore::Sample> StragglerScore::TakeGpuSamples(double interval_s) {
  std::vector<Sample> out;
  for (auto& [rank, s] : ranks_) {
    if (s.gpu_busy_samples == 0) continue;  // no busy sample: the interval is not scored
    out.push_back({rank, s.gpu_ns_pending / s.gpu_busy_samples, interval_s, 0,
                   StragglerMeasure::kGpuClock});
    s.gpu_reasons = s.gpu_reasons_pending;
    s.gpu_reasons_pending.reset();
    s.gpu_ns_pending = 0;
    s.gpu_busy_samples = 0;
  }
  return out;
}

std::vector<StragglerScore::Sample> StragglerScore::RunSamples(double interval_s) {
  const int min_group = std::max(settings_.min_ranks, 2);
  for (auto& [rank, s] : ranks_) {
    for (StragglerMeasure m : {StragglerMeasure::kCpuStretch, StragglerMeasure::kGpuClock}) {
      s.measured_median[static_cast<int>(m)] = 0;
    }
  }
  std::vector<Sample> out;
  for (std::vector<Sample> samples : {TakeCpuSamples(interval_s), TakeGpuSamples(interval_s)}) {
    if (static_cast<int>(samples.size()) < min_group) continue;
    LocalRankMedians(samples, min_group, false);
    for (const Sample& x : samples) {
      if (x.median_s <= 0) continue;
      RankState& s = ranks_[x.rank];
      s.measured_step[static_cast<int>(x.measure)] = x.step_s;
      s.measured_median[static_cast<int>(x.measure)] = x.median_s;
      out.push_back(x);
    }
  }
  return out;
}

std::vector<StragglerScore::Sample> StragglerScore::SlowerOf(
    const std::vector<Sample>& samples) const {
  std::map<int, Sample> by_rank;
  for (const Sample& x : samples) {
    auto [it, added] = by_rank.emplace(x.rank, x);
    // The higher ratio; on a tie the measure it was scored by last, so that its figures do not
    // switch between two while both read the same.
    const double mine = SlowRatio(x), other = SlowRatio(it->second);
    const auto last = scores_.find(x.rank);
    if (!added && (mine > other || (mine == other && last != scores_.end() &&
                                     last->second.measure == x.measure))) {
      it->second = x;
    }
  }
  std::vector<Sample> out;
  out.reserve(by_rank.size());
  for (auto& [rank, x] : by_rank) out.push_back(x);
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

double StragglerScore::SlowRatio(const Sample& x) const {
  const double ratio = x.Ratio();
  if (x.measure != StragglerMeasure::kCpuStretch || x.wall_s <= 0) return ratio;
  // delay = cpu * (stretch - 1): beyond the median's, cpu * (stretch - median).
  const double extra_delay_s = x.cpu_s * (x.step_s - x.median_s);
  return extra_delay_s >= (settings_.threshold - 1) * x.wall_s ? ratio : std::min(ratio, 1.0);
}

void StragglerScore::Score(const std::vector<Sample>& samples) {
  const double clear_below = settings_.ClearBelow();
  for (const Sample& x : samples) {
    const double median = x.median_s;
    if (median <= 0) continue;  // nothing to compare it with
    RankState& s = ranks_[x.rank];
    RankStragglerScore& score = scores_[x.rank];
    const int m = static_cast<int>(x.measure);
    s.best[m] = s.best[m] > 0 ? std::min(s.best[m], x.step_s) : x.step_s;
    s.measured_step[m] = x.step_s;
    s.measured_median[m] = median;
    score.node = s.node;
    score.measure = x.measure;
    score.step_s = x.step_s;
    score.median_s = median;
    score.best_s = s.best[m];
    score.ratio = x.Ratio();
    const double slow_ratio = SlowRatio(x);
    if (slow_ratio >= settings_.threshold) {
      ++s.slow_in_a_row;
      s.fast_in_a_row = 0;
    } else {
      s.slow_in_a_row = 0;
      s.fast_in_a_row = slow_ratio < clear_below ? s.fast_in_a_row + 1 : 0;
    }
    if (!s.named && s.slow_in_a_row >= settings_.persist) s.named = true;
    if (s.named && s.fast_in_a_row >= settings_.persist) s.named = false;
    score.named = s.named;
  }
  // The job waits for its slowest named rank: its steps beyond the median's pace are the time
  // every other rank spent waiting, counted once, on that rank's node. Slowest by its ratio: the
  // medians differ by local rank, and without reports the measures differ in unit.
  const Sample* slowest = nullptr;
  for (const Sample& x : samples) {
    if (ranks_[x.rank].named && (!slowest || x.Ratio() > slowest->Ratio())) slowest = &x;
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
  const size_t min_ranks = static_cast<size_t>(std::max(settings_.min_ranks, 2));
  std::vector<Sample> samples = any_reports_ ? TakeSamples() : std::vector<Sample>{};
  const bool own_work = own_work_ && !samples.empty();
  if (samples.size() < min_ranks) {
    samples.clear();
  } else if (!LocalRankMedians(samples, kLocalRankGroup, true)) {
    std::vector<double> times;
    times.reserve(samples.size());
    for (const Sample& x : samples) times.push_back(x.step_s);
    const double median = Median(std::move(times));
    for (Sample& x : samples) x.median_s = median;
  }
  // The ranks' CPU and GPUs, taken every interval so that each covers one: they score a round
  // without reports, and one whose reports give only wall time per step, which reads alike on
  // every rank of a job that synchronises each step (the slow rank's peers wait for it). There
  // a rank is slow by whichever measure makes it slowest; own work needs no help.
  std::vector<Sample> run = RunSamples(interval_s);
  if (!own_work) samples.insert(samples.end(), run.begin(), run.end());
  samples = SlowerOf(samples);
  if (samples.size() < min_ranks) return {};
  Score(samples);
  return NodeChanges(now_s);
}

StragglerChange StragglerScore::FiguresOf(int node, bool detected) const {
  StragglerChange c;
  c.detected = detected;
  c.node = node;
  c.own_work = own_work_ && any_reports_;
  for (const auto& [rank, score] : scores_) {
    if (score.node != node || !ranks_.at(rank).named) continue;
    c.ranks.push_back(rank);
    if (score.ratio > c.ratio) {
      c.rank = rank;
      c.ratio = score.ratio;
      c.step_s = score.step_s;
      c.median_s = score.median_s;
      c.best_s = score.best_s;
      c.cpu_stretch = score.measure == StragglerMeasure::kCpuStretch;
      c.gpu_clock = score.measure == StragglerMeasure::kGpuClock;
      const RankState& s = ranks_.at(rank);
      c.gpu_clock_max_mhz = s.gpu_max_mhz;
      c.gpu_clock_reasons = s.gpu_reasons;
    }
  }
  return c;
}

void StragglerScore::ClearingFigures(const RankState& s, const RankStragglerScore& score,
                                     StragglerChange* c) {
  const StragglerMeasure named_by = c->gpu_clock     ? StragglerMeasure::kGpuClock
                                    : c->cpu_stretch ? StragglerMeasure::kCpuStretch
                                                     : StragglerMeasure::kSteps;
  const int m = static_cast<int>(named_by);
  const bool same = score.measure == named_by || s.measured_median[m] <= 0;
  const StragglerMeasure measure = same ? score.measure : named_by;
  c->step_s = same ? score.step_s : s.measured_step[m];
  c->median_s = same ? score.median_s : s.measured_median[m];
  c->ratio = c->median_s > 0 ? c->step_s / c->median_s : 0;
  c->cpu_stretch = measure == StragglerMeasure::kCpuStretch;
  c->gpu_clock = measure == StragglerMeasure::kGpuClock;
  c->gpu_clock_reasons = s.gpu_reasons;
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
    // The figures it clears with: its slowest rank's now, by the measure it was named by
    // where that was scored in this interval (else by the one that was).
    for (int rank : c.ranks) {
      auto score = scores_.find(rank);
      if (score == scores_.end()) continue;
      c.why = "back to the median's pace";
      ClearingFigures(ranks_.at(rank), score->second, &c);
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
