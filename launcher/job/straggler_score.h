// StragglerScore: names the rank (and its node) that makes every step of a running job slower,
// from the step reports its ranks already send. Each interval, a rank's time per step (its own
// work where the reports time the step's phases, else the wall time per step) is set against
// the median of every rank's and against its own best; a rank at `threshold` x the median or
// more for `persist` intervals in a row is named (straggler_detected), and cleared once it is
// under `clear_below` for as many (straggler_cleared). What all ranks share is not a
// straggler: the median moves with it (a slower phase of the model, a busy file system), and a
// rank's interval is left out when it was in a phase (evaluation, checkpoint, loading data, a
// phase the script named) or still in its first `warmup_steps` steps of the round.
//
// With three nodes or more, each rank is set against the ranks of its local rank on the other
// nodes rather than against every rank (below).
//
// A round whose ranks send no reports, or whose reports give only wall time per step (alike on
// every rank of a job that synchronises each step), is also scored from what the agents read of
// each rank's CPU (the scheduler's run time and run-queue delay, OnCpuSample): a rank's "step
// time" is then its stretch, the seconds its work wanted a CPU per second it got one
// ((run + delay) / run). Ranks doing the same work get the same stretch on equal nodes, whether
// they wait for each other (then they sleep, adding to neither) or not; a rank held off its CPU by its cgroup's quota or
// a busy node has a higher one. Each rank's stretch is set against the median of the ranks with
// its local rank (its place among its node's ranks) on every node: a node is compared with the
// other nodes, so that what differs between one node's ranks alike on every node (their cores:
// local rank 0 on a core busier than the next one's) is not a straggler.
//
// Such a round is scored from the SM clocks of the ranks' GPUs too (OnGpuSample), where NVML
// gives them: a GPU held down by heat, its power cap or a hardware slowdown runs at a lower
// clock than its peers doing the same work, while utilisation cannot tell it from the GPUs
// that wait for it (their NCCL kernels spin, busy). A rank's "step time" is then its GPU's
// nanoseconds per clock cycle (1000 / MHz) over the interval's busy samples, set against the
// median of its local rank's as the stretch is; a rank is slow by whichever of its ratios
// (wall time per step, stretch, clock) is highest. Reports that time the step's phases are
// scored by own work alone. Pure: reports and times come in, changes come out; docs/stragglers.md.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "dlaunch/report.pb.h"

namespace dlaunch {

struct StragglerSettings {
  bool enabled = true;
  double threshold = 1.25;   // a rank's step time at least this x the median is slow
  double clear_below = 0;    // <= 0: halfway between 1 and threshold
  int persist = 3;           // slow intervals in a row before it is named; fast ones to clear
  double interval_s = 5;     // how often the score is computed
  int warmup_steps = 5;      // each rank's first steps of a round are not scored
  int min_ranks = 2;         // ranks with a sample in an interval for a median to mean anything
  double ClearBelow() const { return clear_below > 0 ? clear_below : 1 + (threshold - 1) / 2; }
};

// One of a rank's GPUs in one heartbeat (the agent's GpuSample), for the "gpu clock".
struct RankGpuSample {
  double utilization_pct = 0;
  double sm_clock_mhz = 0;       // 0: NVML did not tell
  double sm_clock_max_mhz = 0;   // 0: NVML did not tell
  std::optional<uint64_t> clock_event_reasons;  // NVML's bit mask, where it told
};

// What a rank's figures are: its steps (reports), or, without reports, its CPU stretch or its
// GPU's nanoseconds per SM clock cycle.
enum class StragglerMeasure { kSteps = 0, kCpuStretch = 1, kGpuClock = 2 };

// A rank's latest figures, for the live view.
struct RankStragglerScore {
  int node = -1;
  double step_s = 0;     // its time per step in the last scored interval
  double median_s = 0;   // the median it was set against in that interval
  double best_s = 0;     // its own best since the round began
  double ratio = 0;      // step_s / median_s; 0: not scored yet
  bool named = false;    // a straggler now
  StragglerMeasure measure = StragglerMeasure::kSteps;
};

// A node named or cleared. Its figures are those of its slowest rank.
struct StragglerChange {
  bool detected = true;
  int node = -1;
  int rank = -1;
  std::vector<int> ranks;   // its ranks named slow (detected), or that were (cleared)
  double step_s = 0;
  double median_s = 0;
  double best_s = 0;
  double ratio = 0;
  // The step times are the ranks' own work (the reports' phase timings), not wall time: in a
  // job whose ranks wait for each other every step, only the work tells the slow one.
  bool own_work = false;
  // No rank reports: step_s, median_s and best_s are CPU stretches (OnCpuSample), not seconds;
  // or with gpu_clock, its GPU's nanoseconds per SM clock cycle (OnGpuSample): 1000 / MHz.
  bool cpu_stretch = false;
  bool gpu_clock = false;
  // The rank's GPU, where NVML told: the most its SM clock can run at (0: not told), and the
  // clock event (throttle) reasons seen while it was busy in its last scored interval.
  double gpu_clock_max_mhz = 0;
  std::optional<uint64_t> gpu_clock_reasons;
  double since_s = 0;       // when it was named
  // On a clear: the job's time spent waiting for this node while it was named, the wall time
  // of the slow steps beyond the median's pace (docs/stragglers.md).
  double waited_s = 0;
  // On a clear: "back to the median's pace", "its ranks ended", "the round ended".
  std::string why;
};

// The main reasons in NVML's clock event (throttle) bit mask that hold a busy GPU's clocks down,
// by name ("power cap", "hw slowdown", "sync boost", "sw thermal", "hw thermal", "power brake",
// "applications clocks"); the idle and display bits are left out.
std::vector<std::string> GpuClockReasonNames(uint64_t reasons);

class StragglerScore {
 public:
  explicit StragglerScore(StragglerSettings settings) : settings_(settings) {}

  // A new round: what was known of the ranks is dropped (they are new processes, maybe on
  // other nodes). Call EndRound first to clear the nodes named in the last one.
  void StartRound(double now_s);
  // A rank's report (folded per heartbeat by its agent), received at `now_s`.
  void OnReport(int rank, int node, const v1::WorkerReport& report, double now_s);
  // A rank's CPU counters since it started (the agent's RankCpu), received at `now_s`: scored
  // unless the round's reports time their phases.
  void OnCpuSample(int rank, int node, double cpu_s, double run_delay_s, double now_s);
  // A rank's GPUs in one heartbeat (the GPUs its plan gave it): scored as the CPU counters are.
  void OnGpuSample(int rank, int node, const std::vector<RankGpuSample>& gpus, double now_s);
  // A rank ended: it is no longer scored.
  void OnRankEnded(int rank);
  // Whether an interval has passed since the last evaluation.
  bool Due(double now_s) const { return settings_.enabled && now_s - evaluated_at_s_ >= settings_.interval_s; }
  // Scores the interval since the last call; the nodes named or cleared by it.
  std::vector<StragglerChange> Evaluate(double now_s);
  // The round ends: every node still named is cleared ("the round ended").
  std::vector<StragglerChange> EndRound(double now_s);

  const std::map<int, RankStragglerScore>& ranks() const { return scores_; }
  // A node's score: the highest ratio of its ranks (0: none scored).
  std::map<int, double> NodeScores() const;
  // Nodes named now.
  const std::map<int, StragglerChange>& named() const { return named_; }
  const StragglerSettings& settings() const { return settings_; }

 private:
  // What a rank did since its last scored interval.
  struct Pending {
    long steps = 0;
    double wall_s = 0;
    double work_s = 0;
    bool timed = true;     // every report of it timed the step's phases
    bool paused = false;   // a phase other than training was seen
  };
  struct RankState {
    int node = -1;
    long first_step = -1;
    long last_step = -1;
    double last_report_s = 0;
    Pending pending;
    int slow_in_a_row = 0;
    int fast_in_a_row = 0;
    bool named = false;
    // The CPU counters (OnCpuSample): the last ones, and what they grew by since the last
    // scored interval; intervals sampled, the first (its start-up) not scored.
    bool cpu_seen = false;
    bool cpu_grew = false;  // counters since the base arrived this interval
    double cpu_s = 0, delay_s = 0;
    double cpu_pending_s = 0, delay_pending_s = 0;
    int cpu_intervals = 0;
    // The GPU clocks (OnGpuSample) since the last scored interval: the sum of each busy
    // heartbeat's ns per cycle and their count; the clock event reasons seen then, and in the
    // last scored interval; the slowest GPU's most clock.
    double gpu_ns_pending = 0;
    int gpu_busy_samples = 0;
    std::optional<uint64_t> gpu_reasons_pending, gpu_reasons;
    double gpu_max_mhz = 0;
    // By measure (StragglerMeasure): its own best, and its last figures (a clear says those of
    // the measure it was named by).
    double best[3] = {};
    double measured_step[3] = {}, measured_median[3] = {};
  };
  struct Sample {
    int rank;
    double step_s;
    double wall_s;
    double median_s = 0;  // what it is compared with
    StragglerMeasure measure = StragglerMeasure::kSteps;
    double cpu_s = 0;     // a CPU stretch's: the rank's seconds on a CPU in the interval
    double Ratio() const { return median_s > 0 ? step_s / median_s : 0; }
  };
  // The ratio that can name the rank: a CPU stretch's only where the run-queue delay beyond
  // what the median's stretch would give it is at least `threshold - 1` of the interval's wall
  // time (else at most 1). A rank that mostly sleeps can have a high stretch from a few
  // wake-ups' delays while its pace is the others' within a few per cent: its extra delay
  // bounds how much slower it is.
  double SlowRatio(const Sample& x) const;
  std::vector<Sample> TakeSamples();
  std::vector<Sample> TakeCpuSamples(double interval_s);
  std::vector<Sample> TakeGpuSamples(double interval_s);
  // Each rank's CPU stretch and GPU clock in the interval, each set against its local rank's
  // median (a rank can have two samples, one of each).
  std::vector<Sample> RunSamples(double interval_s);
  // One sample per rank: the one whose SlowRatio is highest.
  std::vector<Sample> SlowerOf(const std::vector<Sample>& samples) const;
  void Score(const std::vector<Sample>& samples);
  // Each sample's median: that of the samples of the same local rank (its place among its
  // node's ranks) on every node; a group under `min_group` gets none (0). With `every_group`,
  // false and nothing set unless every group has `min_group`; else false when no group has.
  bool LocalRankMedians(std::vector<Sample>& samples, int min_group, bool every_group) const;
  // Reports are compared by local rank once each local rank has this many nodes' samples: a
  // median of three or more is one rank's, so one slow rank stands out as against all ranks',
  // while a median of two would halve a single slow rank's ratio.
  static constexpr int kLocalRankGroup = 3;
  // The nodes whose named state changed this interval.
  std::vector<StragglerChange> NodeChanges(double now_s);
  StragglerChange FiguresOf(int node, bool detected) const;
  // A rank's figures for its node's clear: those of the measure `c` was named by.
  static void ClearingFigures(const RankState& s, const RankStragglerScore& score,
                              StragglerChange* c);

  StragglerSettings settings_;
  std::map<int, RankState> ranks_;
  std::map<int, RankStragglerScore> scores_;
  std::map<int, StragglerChange> named_;   // by node: as named, waited_s growing
  double evaluated_at_s_ = 0;
  bool own_work_ = false;                  // the last interval compared own work
  bool any_reports_ = false;               // a rank of the round sent a report
};

}  // namespace dlaunch
