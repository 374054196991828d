#include "common/liveness_policy.h"

#include <algorithm>

namespace dlaunch {

using std::chrono::milliseconds;

LivenessPolicy::LivenessPolicy(milliseconds heartbeat, int misses)
    : heartbeat_(std::max(kMinHeartbeat, heartbeat)), misses_(misses > 0 ? misses : kDefaultMisses) {}

milliseconds LivenessPolicy::silent_after() const { return std::min(2 * heartbeat_, lost_after()); }

milliseconds LivenessPolicy::ping_interval() const {
  return std::min(heartbeat_, milliseconds(1000));
}

milliseconds LivenessPolicy::lease() const { return std::max(lost_after(), kMinLease); }

milliseconds LivenessPolicy::workers_gone_after(milliseconds grace) const {
  return lease() + lease_check_slack() + std::max(grace, milliseconds(0)) + kKillSlack;
}

}  // namespace dlaunch
