#include "worker/learning_rate_schedule.h"

#include <algorithm>
#include <cmath>

namespace dlaunch::worker {

LearningRateSchedule::LearningRateSchedule(double base_lr, int world_size, double warmup_epochs,
                                           int64_t steps_per_epoch, LearningRateDecay decay,
                                           int64_t total_steps)
    : base_lr_(base_lr),
      target_(base_lr * world_size),
      warmup_steps_(warmup_epochs > 0
                        ? static_cast<int64_t>(std::llround(warmup_epochs * steps_per_epoch))
                        : 0),
      decay_(decay),
      total_steps_(total_steps) {}

double LearningRateSchedule::At(int64_t step) const {
  if (warmup_steps_ > 0 && step < warmup_steps_) {
    const double progress = static_cast<double>(step) / static_cast<double>(warmup_steps_);
    return base_lr_ + (target_ - base_lr_) * progress;
  }
  if (decay_ == LearningRateDecay::kConstant) return target_;
  // Cosine from the target at the end of the warm-up to zero after the last step: the last
  // step's rate is small but not zero, so every step still moves the weights.
  const int64_t span = total_steps_ - warmup_steps_;
  if (span <= 0) return target_;
  const double progress =
      std::min(1.0, static_cast<double>(step - warmup_steps_) / static_cast<double>(span));
  return target_ * 0.5 * (1.0 + std::cos(M_PI * progress));
}

}  // namespace dlaunch::worker
