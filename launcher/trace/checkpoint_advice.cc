#include "launcher/trace/checkpoint_advice.h"

#include <algorithm>
#include <cmath>

namespace dlaunch {

v1::CheckpointAdvice AdviseCheckpointInterval(const v1::GoodputAccount& account,
                                              const std::set<int64_t>& checkpoint_steps,
                                              const std::vector<double>& checkpoint_costs,
                                              int failures, bool none_written) {
  v1::CheckpointAdvice a;
  a.set_failures(failures);
  std::vector<int64_t> steps(checkpoint_steps.begin(), checkpoint_steps.end());
  if (!steps.empty()) {
    int64_t gap = steps.front();
    for (size_t i = 1; i < steps.size(); ++i) gap = std::min(gap, steps[i] - steps[i - 1]);
    a.set_used_interval_steps(gap);
  }
  int64_t steps_run = 0;
  for (const v1::RoundGoodput& r : account.rounds()) {
    if (r.last_step() > 0) steps_run += r.last_step() - std::min(r.resumed_at_step(), r.last_step());
  }
  const double productive = account.split().productive().seconds();
  if (steps_run > 0 && productive > 0) a.set_mean_step_s(productive / steps_run);
  if (checkpoint_costs.empty() && none_written && checkpoint_steps.empty()) {
    a.set_basis(v1::NOT_KNOWN);
    a.set_note("not known: this job wrote no checkpoint, so a failure would restart it from its "
               "first step (dlaunch-worker: --checkpoint-dir DIR --checkpoint-every N)");
    return a;
  }
  if (checkpoint_costs.empty()) {
    a.set_basis(v1::NOT_KNOWN);
    a.set_note("not known: no checkpoint's length is in the journal (dlaunch-worker's step "
                "trace has them, and so do the Python package's phase(\"checkpoint\") reports)");
    return a;
  }
  double sum = 0;
  for (double c : checkpoint_costs) sum += c;
  a.set_checkpoint_cost_s(sum / checkpoint_costs.size());
  if (failures == 0) {
    a.set_basis(v1::NOT_KNOWN);
    a.set_note("not known: no failure in this job, so no mean time between failures");
    return a;
  }
  a.set_mtbf_s(account.wall_s() / failures);
  a.set_optimal_interval_s(std::sqrt(2 * a.checkpoint_cost_s() * a.mtbf_s()));
  if (a.mean_step_s() > 0) {
    a.set_optimal_interval_steps(
        std::max<int64_t>(1, std::llround(a.optimal_interval_s() / a.mean_step_s())));
  }
  a.set_basis(v1::MEASURED);
  a.set_note("sqrt(2 x checkpoint cost x mean time between failures), from this job alone");
  return a;
}

}  // namespace dlaunch
