// LearningRateSchedule: the linear scaling rule for data-parallel SGD (Goyal et al., 2017).
// The target rate is base_lr x world_size; with a warm-up the rate climbs linearly from base_lr
// to the target over the first warmup_epochs, which keeps large effective batches from
// diverging early. Pure.
#pragma once

#include <cstdint>

namespace dlaunch::worker {

class LearningRateSchedule {
 public:
  LearningRateSchedule(double base_lr, int world_size, double warmup_epochs,
                       int64_t steps_per_epoch);

  // The rate for the optimizer step numbered `step` (0-based, global).
  double At(int64_t step) const;

  double target() const { return target_; }

 private:
  double base_lr_;
  double target_;
  int64_t warmup_steps_;
};

}  // namespace dlaunch::worker
