#include "worker/learning_rate_schedule.h"

#include <cmath>

namespace dlaunch::worker {

LearningRateSchedule::LearningRateSchedule(double base_lr, int world_size, double warmup_epochs,
                                           int64_t steps_per_epoch)
    : base_lr_(base_lr),
      target_(base_lr * world_size),
      warmup_steps_(warmup_epochs > 0
                        ? static_cast<int64_t>(std::llround(warmup_epochs * steps_per_epoch))
                        : 0) {}

double LearningRateSchedule::At(int64_t step) const {
  if (warmup_steps_ <= 0 || step >= warmup_steps_) return target_;
  const double progress = static_cast<double>(step) / static_cast<double>(warmup_steps_);
  return base_lr_ + (target_ - base_lr_) * progress;
}

}  // namespace dlaunch::worker
