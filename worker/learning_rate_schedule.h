// LearningRateSchedule: the linear scaling rule for data-parallel SGD (Goyal et al., 2017).
// The target rate is base_lr x world_size; with a warm-up the rate climbs linearly from base_lr
// to the target over the first warmup_epochs, which keeps large effective batches from
// diverging early. After the warm-up the rate stays at the target ("constant") or follows a
// half cosine from the target down to zero at the last step ("cosine", Loshchilov & Hutter,
// 2017), which lets every scale of a study finish at the same point of its schedule. Pure.
#pragma once

#include <cstdint>

namespace dlaunch::worker {

enum class LearningRateDecay { kConstant, kCosine };

class LearningRateSchedule {
 public:
  // total_steps: the run's last step + 1 (only the cosine decay uses it).
  LearningRateSchedule(double base_lr, int world_size, double warmup_epochs,
                       int64_t steps_per_epoch, LearningRateDecay decay = LearningRateDecay::kConstant,
                       int64_t total_steps = 0);

  // The rate for the optimizer step numbered `step` (0-based, global).
  double At(int64_t step) const;

  double target() const { return target_; }

 private:
  double base_lr_;
  double target_;
  int64_t warmup_steps_;
  LearningRateDecay decay_;
  int64_t total_steps_;
};

}  // namespace dlaunch::worker
