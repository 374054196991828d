// LossScaler: fp16 dynamic loss scaling, as torch.cuda.amp.GradScaler does it. The loss is
// multiplied by scale() before backward; the gradients are multiplied by UnscaleFactor() after;
// Update(finite) says whether the step may be applied and moves the scale: halve it after a
// non-finite gradient, double it after kGrowthInterval finite steps in a row. Pure: the
// trainer does the tensor work, this decides.
#pragma once

#include <cstdint>

namespace dlaunch::worker {

class LossScaler {
 public:
  // torch.cuda.amp.GradScaler defaults.
  static constexpr double kInitialScale = 65536.0;
  static constexpr double kGrowth = 2.0;
  static constexpr double kBackoff = 0.5;
  static constexpr int64_t kGrowthInterval = 2000;

  // A scaler resumed at `scale` with `good_steps` finite steps since its last change.
  explicit LossScaler(double scale = kInitialScale, int64_t good_steps = 0)
      : scale_(scale), good_steps_(good_steps) {}

  double scale() const { return scale_; }
  int64_t good_steps() const { return good_steps_; }

  // What the scaled gradients are multiplied by to unscale them.
  double UnscaleFactor() const { return 1.0 / scale_; }

  // After the unscaled gradients were checked (identical on every rank after the all-reduce, so
  // every rank decides the same): true when the optimizer step is applied.
  bool Update(bool finite);

 private:
  double scale_;
  int64_t good_steps_;
};

}  // namespace dlaunch::worker
