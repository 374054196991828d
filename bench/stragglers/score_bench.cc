// The straggler score's own cost in the launcher, in process: N ranks each send one folded report
// a second (as a heartbeat carries it), and the score is computed every 5 s, as by default. Prints
// one markdown row per N: the cost of one report, of one interval's evaluation, and the launcher's
// CPU share this adds (both per simulated second). The ranks' step time is not touched by the
// score at all (it runs in the launcher); bench/stragglers/straggler_bench.py measures that.
//
//   score_bench [N ...]      (default 1000 10000 100000)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "launcher/job/straggler_score.h"

namespace dlaunch {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

void Row(int ranks) {
  StragglerScore score{StragglerSettings{}};
  score.StartRound(0);
  constexpr int kSeconds = 60;
  double report_s = 0, evaluate_s = 0;
  int evaluations = 0;
  size_t named = 0;
  v1::WorkerReport r;
  r.set_kind(v1::WorkerReport::STEP);
  for (int t = 0; t <= kSeconds; ++t) {
    const auto t0 = Clock::now();
    for (int rank = 0; rank < ranks; ++rank) {
      r.set_step(t * 10);
      // One slow rank in a thousand, so the evaluation names some.
      r.set_interval_s(rank % 1000 == 7 ? 2.0 : 1.0);
      r.mutable_timings()->set_forward_ms(rank % 1000 == 7 ? 2000 : 1000);
      score.OnReport(rank, rank / 4, r, t);
    }
    report_s += Since(t0);
    if (score.Due(t)) {
      const auto t1 = Clock::now();
      for (const StragglerChange& c : score.Evaluate(t)) named += c.detected;
      evaluate_s += Since(t1);
      ++evaluations;
    }
  }
  const double reports = static_cast<double>(ranks) * (kSeconds + 1);
  const double per_second = (report_s + evaluate_s) / (kSeconds + 1);
  std::printf("| %d | %.3f | %.2f | %.3f%% | %zu |\n", ranks, report_s / reports * 1e6,
              evaluate_s / evaluations * 1e3, per_second * 100, named);
}

}  // namespace
}  // namespace dlaunch

int main(int argc, char** argv) {
  std::vector<int> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::atoi(argv[i]));
  if (sizes.empty()) sizes = {1000, 10000, 100000};
  std::printf("| ranks | per report (us) | per evaluation (ms) | launcher CPU (one core) | nodes named |\n");
  std::printf("|---|---|---|---|---|\n");
  for (int n : sizes) dlaunch::Row(n);
  return 0;
}
