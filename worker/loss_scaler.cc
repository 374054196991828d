#include "worker/loss_scaler.h"

namespace dlaunch::worker {

bool LossScaler::Update(bool finite) {
  if (!finite) {
    scale_ *= kBackoff;
    good_steps_ = 0;
    return false;
  }
  if (++good_steps_ >= kGrowthInterval) {
    scale_ *= kGrowth;
    good_steps_ = 0;
  }
  return true;
}

}  // namespace dlaunch::worker
